# usp_chapter(NN NAME [NO_EXERCISES] [SOURCES extra.cpp ...] [LIBS ...])
#
# A chapter NN_NAME builds
#   usp_chNN_impl     the chapter's exercise functions: solutions/NN_NAME/*.cpp by default, or
#                     exercises/NN_NAME/*.cpp when NN (or "all") is in USP_EXERCISES (an
#                     interface library for a chapter declared NO_EXERCISES)
#   chNN_NAME         the executable: chapters/NN_NAME/main.cpp plus SOURCES
# The chapter's public headers (chapters/NN_NAME/*.hpp) declare what both implementations define.
function(usp_uses_exercises nn out)
  set(${out} OFF PARENT_SCOPE)
  if("all" IN_LIST USP_EXERCISES OR "${nn}" IN_LIST USP_EXERCISES)
    set(${out} ON PARENT_SCOPE)
  endif()
endfunction()

function(usp_chapter nn name)
  cmake_parse_arguments(CH "NO_EXERCISES" "" "SOURCES;LIBS" ${ARGN})
  set(dir ${nn}_${name})
  usp_uses_exercises(${nn} use_ex)
  if(use_ex)
    set(impl_dir ${PROJECT_SOURCE_DIR}/exercises/${dir})
  else()
    set(impl_dir ${PROJECT_SOURCE_DIR}/solutions/${dir})
  endif()
  file(GLOB impl_sources CONFIGURE_DEPENDS ${impl_dir}/*.cpp ${impl_dir}/*.cu)
  if(NOT USP_HAVE_CUDA)
    list(FILTER impl_sources EXCLUDE REGEX "\\.cu$")
  endif()
  if(NOT CH_NO_EXERCISES)
    add_library(usp_ch${nn}_impl STATIC ${impl_sources})
    target_link_libraries(usp_ch${nn}_impl PUBLIC usp_core ${CH_LIBS})
    usp_warnings(usp_ch${nn}_impl)
  else()
    # A chapter without exercises: the library only carries the include path and the links.
    add_library(usp_ch${nn}_impl INTERFACE)
    target_link_libraries(usp_ch${nn}_impl INTERFACE usp_core ${CH_LIBS})
  endif()

  add_executable(ch${nn}_${name} ${PROJECT_SOURCE_DIR}/chapters/${dir}/main.cpp ${CH_SOURCES})
  target_link_libraries(ch${nn}_${name} PRIVATE usp_ch${nn}_impl)
  usp_warnings(ch${nn}_${name})
  set_target_properties(ch${nn}_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  if(use_ex AND NOT CH_NO_EXERCISES)
    message(STATUS "chapter ${nn}: building the EXERCISE stubs from exercises/${dir}")
  endif()
endfunction()
