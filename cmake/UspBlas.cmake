# OpenBLAS for the CPU matmuls: the library (CMake's FindBLAS) and its cblas.h, which FindBLAS
# does not look for. Sets USP_HAVE_BLAS, USP_BLAS_WHY (what was found, or why nothing) and the
# target usp_blas (the library plus cblas.h's directory).
#
# The library: CMAKE_PREFIX_PATH, BLAS_ROOT, CMAKE_LIBRARY_PATH or LD_LIBRARY_PATH (FindBLAS's own
# search); BLAS_HOME or OpenBLAS_HOME name an installation prefix too.
# cblas.h: beside the library found (<prefix>/include for <prefix>/lib/libopenblas.so; Debian's
# <usr>/include/<arch>/openblas-pthread for <usr>/lib/<arch>/openblas-pthread/), under BLAS_HOME or
# OpenBLAS_HOME, then CMAKE_PREFIX_PATH and the system.
set(USP_HAVE_BLAS OFF)
set(_blas_homes "")
foreach(v BLAS_HOME OpenBLAS_HOME)
  if(DEFINED ENV{${v}} AND NOT "$ENV{${v}}" STREQUAL "")
    list(APPEND _blas_homes "$ENV{${v}}")
  endif()
endforeach()
if(_blas_homes AND NOT BLAS_ROOT AND NOT DEFINED ENV{BLAS_ROOT})
  set(BLAS_ROOT ${_blas_homes})
endif()

# FindBLAS links a test program against the library it found; the libraries that one needs
# (libgfortran) are looked for in the directories the build was pointed at (USP_RUNTIME_DIRS,
# cmake/UspRunPath.cmake), as the real link does through the build's RPATH.
set(BLA_VENDOR OpenBLAS)
set(_blas_required_link_options ${CMAKE_REQUIRED_LINK_OPTIONS})
foreach(dir IN LISTS USP_RUNTIME_DIRS)
  list(APPEND CMAKE_REQUIRED_LINK_OPTIONS "LINKER:-rpath-link,${dir}")
endforeach()
find_package(BLAS)
set(CMAKE_REQUIRED_LINK_OPTIONS ${_blas_required_link_options})
if(NOT BLAS_FOUND)
  set(USP_BLAS_WHY "no libopenblas (looked in CMAKE_PREFIX_PATH, BLAS_ROOT, CMAKE_LIBRARY_PATH, LD_LIBRARY_PATH and the system)")
  return()
endif()

# Directories to look in for cblas.h: up to three levels above the library's directory, as
# linked and with its symbolic links resolved (Debian's libopenblas.so is an alternatives link).
set(_cblas_hints "")
set(_cblas_suffixes include include/openblas openblas)
foreach(lib IN LISTS BLAS_LIBRARIES)
  if(NOT IS_ABSOLUTE "${lib}")
    continue()  # a flag such as -lpthread
  endif()
  file(REAL_PATH "${lib}" real)
  foreach(path IN ITEMS "${lib}" "${real}")
    get_filename_component(dir "${path}" DIRECTORY)
    get_filename_component(flavor "${dir}" NAME)  # Debian: openblas-pthread, openblas-openmp ...
    list(APPEND _cblas_suffixes include/${CMAKE_LIBRARY_ARCHITECTURE}/${flavor})
    foreach(up IN ITEMS .. ../.. ../../..)
      get_filename_component(hint "${dir}/${up}" ABSOLUTE)
      list(APPEND _cblas_hints "${hint}")
    endforeach()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES _cblas_suffixes)
find_path(USP_CBLAS_INCLUDE_DIR cblas.h HINTS ${_cblas_hints} ${_blas_homes} PATH_SUFFIXES ${_cblas_suffixes})
if(NOT USP_CBLAS_INCLUDE_DIR)
  set(USP_BLAS_WHY "${BLAS_LIBRARIES} found, but no cblas.h beside it, in BLAS_HOME/OpenBLAS_HOME, CMAKE_PREFIX_PATH or the system")
  return()
endif()

set(USP_HAVE_BLAS ON)
set(USP_BLAS_WHY "${BLAS_LIBRARIES}, ${USP_CBLAS_INCLUDE_DIR}/cblas.h")
add_library(usp_blas INTERFACE)
target_link_libraries(usp_blas INTERFACE BLAS::BLAS)
target_include_directories(usp_blas SYSTEM INTERFACE ${USP_CBLAS_INCLUDE_DIR})
