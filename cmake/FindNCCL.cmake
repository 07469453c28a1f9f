# FindNCCL: NCCL's header and library, wherever they came from. Looks, in this order, in
#   NCCL_HOME or NCCL_ROOT (CMake variable or environment): <dir>/include, <dir>/lib, <dir>/lib64
#   NCCL_HINTS (the caller's: the CUDA toolkit's directories), CMAKE_PREFIX_PATH and the system
#   the pip package nvidia-nccl-cuXX (site-packages/nvidia/nccl, as PyTorch's wheels bring it) of
#   each interpreter in NCCL_PYTHONS: it ships libnccl.so.2 only, no libnccl.so
# Sets NCCL_FOUND, NCCL_INCLUDE_DIR, NCCL_LIBRARY and the imported target NCCL::nccl; when not
# found, NCCL_WHY_NOT says what was missing where.
# It works in script mode too (cmake -P): tests/prefix_build/find_nccl_pip.sh checks the pip layout so.

set(_nccl_homes "")
foreach(v NCCL_HOME NCCL_ROOT)
  if(${v})
    list(APPEND _nccl_homes "${${v}}")
  elseif(DEFINED ENV{${v}} AND NOT "$ENV{${v}}" STREQUAL "")
    list(APPEND _nccl_homes "$ENV{${v}}")
  endif()
endforeach()

# site-packages/nvidia/nccl of each python that has the pip package
set(_nccl_pip_dirs "")
foreach(py IN LISTS NCCL_PYTHONS)
  execute_process(
    COMMAND "${py}" -c "import importlib.util as u; s = u.find_spec('nvidia.nccl'); print(list(s.submodule_search_locations)[0] if s else '')"
    OUTPUT_VARIABLE _dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND IS_DIRECTORY "${_dir}")
    list(APPEND _nccl_pip_dirs "${_dir}")
  endif()
endforeach()

# The explicit homes first, alone; then the usual places; the pip packages last.
set(_nccl_names nccl libnccl.so.2)
if(_nccl_homes)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_homes} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES ${_nccl_names} NAMES_PER_DIR HINTS ${_nccl_homes} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
endif()
find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_HINTS})
find_library(NCCL_LIBRARY NAMES ${_nccl_names} NAMES_PER_DIR HINTS ${NCCL_HINTS})
if(_nccl_pip_dirs)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_pip_dirs} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NCCL_LIBRARY NAMES ${_nccl_names} NAMES_PER_DIR HINTS ${_nccl_pip_dirs} PATH_SUFFIXES lib NO_DEFAULT_PATH)
endif()

set(NCCL_FOUND FALSE)
if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
  set(NCCL_FOUND TRUE)
  set(NCCL_WHY_NOT "")
  if(NOT CMAKE_SCRIPT_MODE_FILE AND NOT TARGET NCCL::nccl)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
  endif()
else()
  set(_where "NCCL_HOME/NCCL_ROOT (unset)")
  if(_nccl_homes)
    set(_where "NCCL_HOME/NCCL_ROOT (${_nccl_homes})")
  endif()
  string(APPEND _where ", the CUDA toolkit, CMAKE_PREFIX_PATH, the system")
  if(NCCL_PYTHONS)
    string(APPEND _where ", the nvidia-nccl pip package of ${NCCL_PYTHONS}")
  endif()
  if(NOT NCCL_INCLUDE_DIR AND NOT NCCL_LIBRARY)
    set(NCCL_WHY_NOT "neither nccl.h nor libnccl in ${_where}")
  elseif(NOT NCCL_INCLUDE_DIR)
    set(NCCL_WHY_NOT "libnccl at ${NCCL_LIBRARY} but no nccl.h in ${_where}")
  else()
    set(NCCL_WHY_NOT "nccl.h in ${NCCL_INCLUDE_DIR} but no libnccl (.so or .so.2) in ${_where}")
  endif()
endif()
