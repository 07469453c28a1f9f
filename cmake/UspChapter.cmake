# Chapters and their exercises, in one build tree.
#
# usp_chapter(NN NAME [NO_EXERCISES] [SOURCES a.cpp ...] [VARIANT_SOURCES b.cpp ...] [LIBS ...]
#             [EXERCISES_OF MM ...])
#   usp_chNN             the chapter's own code: SOURCES (everything but main.cpp), compiled once
#   usp_chNN_solution    the exercise functions from solutions/NN_NAME/ (the reference)
#   usp_chNN_exercise    the same functions from exercises/NN_NAME/ (the student's files)
#   usp_chNN_mutant      the same functions from BUILD/mutant/solutions/NN_NAME/: a copy of the
#                        solutions that `./usp test --mutants` patches with one known-wrong change
#                        at a time (tests/mutants/); not part of `all`, built only by the runner
#   chNN_NAME            build/bin/chNN_NAME: main.cpp + usp_chNN + usp_chNN_solution
#   chNN_NAME_exercise   build/bin/exercises/chNN_NAME: main.cpp + usp_chNN + usp_chNN_exercise
# EXERCISES_OF names earlier chapters whose exercise functions this chapter's code calls (chapter
# 10's optimizer runs 05's ZeRO-1 step): each variant links theirs of the same kind, so the exercise
# build runs the student's files of those chapters too (the mutant variant links their solutions).
# VARIANT_SOURCES are chapter files compiled into each variant because they inline the exercise
# code (chapter 11's kernels call the student's header-only device functions; the chapter sets
# a compile definition on each variant to pick the bodies).
# Only the exercise files and the links differ between the two variants, so switching a chapter
# to the student's code recompiles the student's files and nothing else. The libraries are
# OBJECT libraries: every object is linked (the chapter's code and the exercise functions call
# each other, which static archives would resolve only in the right order).
#
# usp_chapter_test(NN NAME name SOURCES ... [RANKS 2 3 ...] [LIBS ...] [TIMEOUT s])
#   the chapter's Catch2 tests, built twice from one set of objects:
#   name             over the solutions, ctest label chNN (part of `ctest`, `./usp test`)
#   name_exercise    over the exercises, ctest label exNN, only in `ctest -C exercises`
#                    (`./usp test NN --exercises`), so a plain `ctest` never runs the stubs.
#   name_mutant      over the mutant copy, ctest label muNN, only in `ctest -C mutants`; its
#                    executables are built by the target usp_mutants_chNN alone.
#   VARIANT_SOURCES are test files compiled once per variant (they inline exercise code).
# A chapter declared NO_EXERCISES has no exercise variants. With USP_EXERCISE_VARIANTS=OFF (the
# sanitizer tree, whose tests are the solutions') no chapter has the exercise variant; the mutant
# variant stays (it is built only by the mutant runner).

function(usp_exercise_variants nn no_exercises out)
  if(no_exercises)
    set(${out} solution PARENT_SCOPE)
  elseif(NOT USP_EXERCISE_VARIANTS)
    set(${out} solution mutant PARENT_SCOPE)
  else()
    set(${out} solution exercise mutant PARENT_SCOPE)
  endif()
endfunction()

# The directory a variant's exercise functions come from.
function(usp_variant_dir variant dir out)
  if(variant STREQUAL "mutant")
    set(${out} ${PROJECT_BINARY_DIR}/mutant/solutions/${dir} PARENT_SCOPE)
  else()
    set(${out} ${PROJECT_SOURCE_DIR}/${variant}s/${dir} PARENT_SCOPE)
  endif()
endfunction()

# The libraries of the chapters in EXERCISES_OF that a variant of chapter nn links: their exercise
# functions, usp_chMM_<variant> (the solutions for the mutant variant, which mutates chapter nn only).
function(usp_exercises_of nn variant out)
  get_property(used GLOBAL PROPERTY USP_CH${nn}_EXERCISES_OF)
  set(kind ${variant})
  if(variant STREQUAL "mutant")
    set(kind solution)
  endif()
  set(libs)
  foreach(mm IN LISTS used)
    list(APPEND libs usp_ch${mm}_${kind})
  endforeach()
  set(${out} ${libs} PARENT_SCOPE)
endfunction()

# The mutant copy starts as the solutions (copied once; the runner restores and patches it).
function(usp_seed_mutant_dir dir)
  file(GLOB files RELATIVE ${PROJECT_SOURCE_DIR}/solutions/${dir} CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/solutions/${dir}/*)
  foreach(f IN LISTS files)
    set(copy ${PROJECT_BINARY_DIR}/mutant/solutions/${dir}/${f})
    if(NOT EXISTS ${copy})
      file(COPY ${PROJECT_SOURCE_DIR}/solutions/${dir}/${f} DESTINATION ${PROJECT_BINARY_DIR}/mutant/solutions/${dir})
    endif()
  endforeach()
endfunction()

function(usp_chapter nn name)
  cmake_parse_arguments(CH "NO_EXERCISES" "" "SOURCES;VARIANT_SOURCES;LIBS;EXERCISES_OF" ${ARGN})
  set(dir ${nn}_${name})
  set_property(GLOBAL PROPERTY USP_CH${nn}_NO_EXERCISES ${CH_NO_EXERCISES})
  # LIBS may name other chapters' OBJECT libraries (usp_ch06 usp_ch06_solution): their objects
  # reach only the targets that link them directly, so every executable and test of this chapter
  # links them too.
  set_property(GLOBAL PROPERTY USP_CH${nn}_LIBS ${CH_LIBS})
  set_property(GLOBAL PROPERTY USP_CH${nn}_EXERCISES_OF ${CH_EXERCISES_OF})

  if(CH_SOURCES)
    add_library(usp_ch${nn} OBJECT ${CH_SOURCES})
    target_link_libraries(usp_ch${nn} PUBLIC usp_core ${CH_LIBS})
    usp_warnings(usp_ch${nn})
  else()
    add_library(usp_ch${nn} INTERFACE)
    target_link_libraries(usp_ch${nn} INTERFACE usp_core ${CH_LIBS})
  endif()

  usp_exercise_variants(${nn} "${CH_NO_EXERCISES}" variants)
  if(NOT CH_NO_EXERCISES)
    usp_seed_mutant_dir(${dir})
    add_custom_target(usp_mutants_ch${nn})
  endif()
  foreach(variant IN LISTS variants)
    set(impl usp_ch${nn}_${variant})
    usp_variant_dir(${variant} ${dir} impl_dir)
    file(GLOB impl_sources CONFIGURE_DEPENDS ${impl_dir}/*.cpp ${impl_dir}/*.cu)
    list(APPEND impl_sources ${CH_VARIANT_SOURCES})
    if(NOT USP_HAVE_CUDA)
      list(FILTER impl_sources EXCLUDE REGEX "\\.cu$")
    endif()
    set(exclude)
    if(variant STREQUAL "mutant")
      set(exclude EXCLUDE_FROM_ALL)
    endif()
    if(impl_sources)
      add_library(${impl} OBJECT ${exclude} ${impl_sources})
      usp_warnings(${impl})
    else()
      add_library(${impl} INTERFACE)
    endif()
    if(impl_sources)
      target_link_libraries(${impl} PUBLIC usp_ch${nn})
    else()
      target_link_libraries(${impl} INTERFACE usp_ch${nn})
    endif()

    if(variant STREQUAL "mutant")
      continue()  # the runner needs the tests only
    endif()
    set(exe ch${nn}_${name})
    set(bin ${PROJECT_BINARY_DIR}/bin)
    if(variant STREQUAL "exercise")
      set(exe ch${nn}_${name}_exercise)
      set(bin ${PROJECT_BINARY_DIR}/bin/exercises)
    endif()
    usp_exercises_of(${nn} ${variant} used_libs)
    add_executable(${exe} ${PROJECT_SOURCE_DIR}/chapters/${dir}/main.cpp)
    target_link_libraries(${exe} PRIVATE usp_ch${nn} ${impl} ${CH_LIBS} ${used_libs})
    usp_warnings(${exe})
    set_target_properties(${exe} PROPERTIES OUTPUT_NAME ch${nn}_${name} RUNTIME_OUTPUT_DIRECTORY ${bin})
  endforeach()
endfunction()

function(usp_chapter_test nn)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;VARIANT_SOURCES;RANKS;LIBS" ${ARGN})
  get_property(no_exercises GLOBAL PROPERTY USP_CH${nn}_NO_EXERCISES)
  get_property(chapter_libs GLOBAL PROPERTY USP_CH${nn}_LIBS)
  if(T_SOURCES)
    add_library(${T_NAME}_objects OBJECT ${T_SOURCES})
    target_link_libraries(${T_NAME}_objects PUBLIC usp_test_main usp_ch${nn} ${T_LIBS})
    usp_warnings(${T_NAME}_objects)
  else()
    add_library(${T_NAME}_objects INTERFACE)
    target_link_libraries(${T_NAME}_objects INTERFACE usp_test_main usp_ch${nn} ${T_LIBS})
  endif()
  set(timeout_arg)
  if(T_TIMEOUT)
    set(timeout_arg TIMEOUT ${T_TIMEOUT})
  endif()

  usp_exercise_variants(${nn} "${no_exercises}" variants)
  foreach(variant IN LISTS variants)
    usp_exercises_of(${nn} ${variant} used_libs)
    if(variant STREQUAL "solution")
      usp_test(NAME ${T_NAME} SOURCES ${T_VARIANT_SOURCES} LABEL ch${nn} RANKS ${T_RANKS} ${timeout_arg}
               LIBS ${T_NAME}_objects usp_ch${nn} usp_ch${nn}_solution ${chapter_libs} ${used_libs})
    else()
      set(label ex${nn})
      set(exclude)
      if(variant STREQUAL "mutant")
        set(label mu${nn})
        set(exclude EXCLUDE_FROM_ALL)
      endif()
      usp_test(NAME ${T_NAME}_${variant} SOURCES ${T_VARIANT_SOURCES} LABEL ${label} RANKS ${T_RANKS} ${timeout_arg}
               ${exclude} CONFIGURATIONS ${variant}s LIBS ${T_NAME}_objects usp_ch${nn} usp_ch${nn}_${variant} ${chapter_libs}
               ${used_libs})
      if(variant STREQUAL "mutant")
        add_dependencies(usp_mutants_ch${nn} ${T_NAME}_mutant)
      endif()
    endif()
  endforeach()
endfunction()
