# The "lessons" corpus (common/data/dataset.hpp): the course's own English, README.md,
# docs/ARCHITECTURE.md and every chapter's README.md joined into BUILD/data/lessons.txt, rebuilt when
# one of them changes. usp_core reads it through USP_LESSONS_TEXT, so every build has a real text
# to train on with no download (`--data lessons`).
function(usp_lessons_corpus core_target)
  file(GLOB chapter_lessons CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/chapters/*/README.md)
  set(files ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/ARCHITECTURE.md ${chapter_lessons})
  set(out ${PROJECT_BINARY_DIR}/data/lessons.txt)
  string(REPLACE ";" "|" joined "${files}")
  add_custom_command(OUTPUT ${out}
                     COMMAND ${CMAKE_COMMAND} "-DFILES=${joined}" -DOUT=${out} -P ${PROJECT_SOURCE_DIR}/cmake/join_files.cmake
                     DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/join_files.cmake
                     COMMENT "Joining the lessons into data/lessons.txt" VERBATIM)
  add_custom_target(lessons_corpus ALL DEPENDS ${out})
  add_dependencies(${core_target} lessons_corpus)
  # Only the file that reads it: a new build path recompiles one file, not the core.
  set_source_files_properties(data/dataset.cpp PROPERTIES COMPILE_DEFINITIONS "USP_LESSONS_TEXT=\"${out}\"")
endfunction()
