# What the build looked for and did not find, in one place for the user and for ./usp setup.
#   usp_missing(KEY WHAT DEBIAN_PACKAGES HOW_TO_POINT): records a dependency not found (KEY: the
#     name ./usp setup checks it by: mpi, openblas, catch2, nlohmann, cli11)
#   usp_missing_report(): writes them to ${CMAKE_BINARY_DIR}/usp-dependencies.txt, one
#     "KEY|WHAT|DEBIAN_PACKAGES|HOW_TO_POINT" line each (an empty file when nothing is missing),
#     and stops the configure in one message when a required one is missing (nlohmann, cli11),
#     unless USP_DEPENDENCY_PROBE is set (cmake/probe: ./usp setup's look before any build tree).
set_property(GLOBAL PROPERTY USP_MISSING "")

function(usp_missing key what packages how)
  set_property(GLOBAL APPEND PROPERTY USP_MISSING "${key}|${what}|${packages}|${how}")
endfunction()

function(usp_missing_report)
  get_property(missing GLOBAL PROPERTY USP_MISSING)
  set(lines "")
  set(required "")
  foreach(entry IN LISTS missing)
    string(APPEND lines "${entry}\n")
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 key)
    list(GET fields 1 what)
    list(GET fields 3 how)
    if(key STREQUAL "nlohmann" OR key STREQUAL "cli11")
      string(APPEND required "\n  ${what}: not found; if it is installed, point the build at it: ${how}")
    endif()
  endforeach()
  file(WRITE "${CMAKE_BINARY_DIR}/usp-dependencies.txt" "${lines}")
  if(required AND NOT USP_DEPENDENCY_PROBE)
    message(FATAL_ERROR "ultrascale-cpp needs:${required}\n"
                        "(Debian: ./usp setup installs them; elsewhere install them and set the variables above, "
                        "as environment variables or -D options)")
  endif()
endfunction()
