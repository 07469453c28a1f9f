# Programs find at run time the shared libraries the build found, without LD_LIBRARY_PATH.
#
# CMake already writes into every program the directories of the libraries it links by full path
# outside the compiler's own (an OpenBLAS, NCCL or Open MPI in a prefix). Not the libraries
# *those* need: OpenBLAS's libgfortran, found at link time beside it or through LD_LIBRARY_PATH.
# So the build path also holds every library directory the build was pointed at:
# LD_LIBRARY_PATH and CMAKE_LIBRARY_PATH as they were at configure time, and lib, lib64 and
# lib/<arch> of each CMAKE_PREFIX_PATH entry; the compiler's own directories are left out.
# On Linux the list is written as DT_RPATH (--disable-new-dtags): the loader searches a
# program's DT_RUNPATH for the program's own libraries only, its DT_RPATH for theirs as well.
# The price: LD_LIBRARY_PATH no longer overrides these directories (reconfigure to change them).
# Included before UspDependencies.cmake, whose link checks (FindBLAS's) use USP_RUNTIME_DIRS too.
set(_dirs "")
foreach(var LD_LIBRARY_PATH CMAKE_LIBRARY_PATH)
  if(DEFINED ENV{${var}})
    string(REPLACE ":" ";" _env "$ENV{${var}}")
    list(APPEND _dirs ${_env})
  endif()
endforeach()
list(APPEND _dirs ${CMAKE_LIBRARY_PATH})
set(_prefixes ${CMAKE_PREFIX_PATH})
if(DEFINED ENV{CMAKE_PREFIX_PATH})
  string(REPLACE ":" ";" _env "$ENV{CMAKE_PREFIX_PATH}")
  list(APPEND _prefixes ${_env})
endif()
foreach(prefix IN LISTS _prefixes)
  list(APPEND _dirs "${prefix}/lib" "${prefix}/lib64")
  if(CMAKE_LIBRARY_ARCHITECTURE)
    list(APPEND _dirs "${prefix}/lib/${CMAKE_LIBRARY_ARCHITECTURE}")
  endif()
endforeach()

set(USP_RUNTIME_DIRS "")
foreach(dir IN LISTS _dirs)
  if(dir STREQUAL "" OR NOT IS_DIRECTORY "${dir}")
    continue()
  endif()
  file(REAL_PATH "${dir}" dir)
  if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND NOT dir IN_LIST USP_RUNTIME_DIRS)
    list(APPEND USP_RUNTIME_DIRS "${dir}")
  endif()
endforeach()

list(APPEND CMAKE_BUILD_RPATH ${USP_RUNTIME_DIRS})
list(APPEND CMAKE_INSTALL_RPATH ${USP_RUNTIME_DIRS})
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
if(CMAKE_SYSTEM_NAME STREQUAL "Linux")
  add_link_options(LINKER:--disable-new-dtags)
endif()
