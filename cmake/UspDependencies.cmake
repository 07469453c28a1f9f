# Finds what the course can use and sets USP_HAVE_{CUDA,NCCL,MPI,BLAS}, each with a USP_<X>_WHY
# (what was found, or why nothing) for the configure summary.
# Required: a C++ compiler, nlohmann-json and CLI11. Every other dependency is optional: without MPI the course runs one rank,
# without CUDA it runs on the CPU, without NCCL CUDA tensors are communicated through host memory.
# Everything is found the CMake way, so a dependency installed anywhere is found when the build is
# pointed at it: CMAKE_PREFIX_PATH (every package), MPI_HOME, BLAS_HOME, NCCL_HOME, CUDAToolkit_ROOT.
# What is missing is written to usp-dependencies.txt in the build tree (cmake/UspMissing.cmake),
# which ./usp setup reads to install it or to say how to point the build at it.
include(UspMissing)
find_package(Threads REQUIRED)

# ---- JSON (nlohmann-json) and the command line (CLI11): header-only, always needed -------------
find_package(nlohmann_json QUIET)
if(NOT nlohmann_json_FOUND)
  usp_missing(nlohmann "nlohmann-json (nlohmann_jsonConfig.cmake)" "nlohmann-json3-dev" "CMAKE_PREFIX_PATH=<its prefix>")
endif()
find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  usp_missing(cli11 "CLI11 (CLI11Config.cmake)" "libcli11-dev" "CMAKE_PREFIX_PATH=<its prefix>")
endif()

# ---- Python: the plot scripts, and where NCCL's pip package may be ------------------------------
find_package(Python3 COMPONENTS Interpreter)

# ---- CUDA (a toolkit is enough: a CUDA build still runs on a machine without a GPU) ----------
set(USP_HAVE_CUDA OFF)
if(NOT USP_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      # Never "native": it is a hard error on a machine without a GPU.
      set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures" FORCE)
    endif()
    # One CUDA runtime per process: the shared one that usp_core links (CUDA::cudart).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # C++20 where CMake knows nvcc's flag for it (CMake 3.25 does not, and CUDA_STANDARD 20 then
    # fails at generation); the .cu code needs only C++17.
    if(DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA_STANDARD 20)
    else()
      set(CMAKE_CUDA_STANDARD 17)
    endif()
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(USP_HAVE_CUDA ON)
  elseif(USP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "USP_CUDA=ON but no CUDA compiler (nvcc) was found; install the CUDA "
                        "toolkit or configure with -DUSP_CUDA=OFF")
  endif()
endif()

# ---- NCCL: in NCCL_HOME, the CUDA toolkit's directories, CMAKE_PREFIX_PATH, or pip's ------------
# nvidia-nccl-cuXX package (PyTorch's wheels bring it) of the pythons the PyTorch checks look at:
# USP_TORCH_PYTHON, python3 on PATH, /usr/bin/python3 (cmake/FindNCCL.cmake).
set(USP_HAVE_NCCL OFF)
set(USP_NCCL_WHY "CUDA is off")
if(USP_HAVE_CUDA)
  set(NCCL_HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR})
  set(NCCL_PYTHONS "")
  foreach(py IN ITEMS "$ENV{USP_TORCH_PYTHON}" "${Python3_EXECUTABLE}" /usr/bin/python3)
    if(NOT py STREQUAL "" AND EXISTS "${py}" AND NOT py IN_LIST NCCL_PYTHONS)
      list(APPEND NCCL_PYTHONS "${py}")
    endif()
  endforeach()
  find_package(NCCL)
  if(NCCL_FOUND)
    set(USP_HAVE_NCCL ON)
    set(USP_NCCL_WHY "${NCCL_LIBRARY}")
    add_library(usp_nccl INTERFACE)
    target_link_libraries(usp_nccl INTERFACE NCCL::nccl)
  else()
    set(USP_NCCL_WHY "${NCCL_WHY_NOT}")
  endif()
endif()

# ---- MPI (without it: a single rank) ----------------------------------------------------------
set(USP_HAVE_MPI OFF)
find_package(MPI COMPONENTS CXX)
if(MPI_CXX_FOUND)
  set(USP_HAVE_MPI ON)
  set(USP_MPIEXEC "${MPIEXEC_EXECUTABLE}")
  # OpenMPI refuses root and more ranks than cores unless told; tests and the driver tell it.
  # Under ctest a rank left waiting ends the job after 60 s (the communicator's watchdog,
  # USP_COMM_TIMEOUT; 300 s by default), well inside ctest's per-test timeout.
  set(USP_MPI_ENV "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;OPENBLAS_NUM_THREADS=1;USP_COMM_TIMEOUT=60")
  set(USP_MPI_WHY "${MPI_CXX_COMPILER}, ${MPIEXEC_EXECUTABLE}")
  if(NOT MPIEXEC_EXECUTABLE)
    usp_missing(mpi "Open MPI's mpirun (beside ${MPI_CXX_COMPILER})" "openmpi-bin" "MPI_HOME=<its prefix>, or its bin/ on PATH")
  endif()
elseif(NOT CMAKE_DISABLE_FIND_PACKAGE_MPI)
  set(USP_MPI_WHY "no MPI C++ compiler wrapper (mpicxx) on PATH or under MPI_HOME")
  usp_missing(mpi "Open MPI (mpicxx, mpirun)" "openmpi-bin libopenmpi-dev" "MPI_HOME=<its prefix>, or its bin/ on PATH")
else()
  set(USP_MPI_WHY "CMAKE_DISABLE_FIND_PACKAGE_MPI")
endif()

# ---- BLAS for CPU matmuls (OpenBLAS and its cblas.h: cmake/UspBlas.cmake) ----------------------
include(UspBlas)
if(NOT USP_HAVE_BLAS)
  usp_missing(openblas "OpenBLAS (${USP_BLAS_WHY})" "libopenblas-dev"
              "CMAKE_PREFIX_PATH=<its prefix>, or BLAS_HOME=<its prefix> (lib/libopenblas.so, include/cblas.h)")
endif()

# ---- Catch2 2.x (Debian's catch2 package) ------------------------------------------------------
find_package(Catch2 2 QUIET)
if(NOT Catch2_FOUND)
  usp_missing(catch2 "Catch2 2.x (Catch2Config.cmake): the tests" "catch2" "CMAKE_PREFIX_PATH=<its prefix>")
  message(WARNING "Catch2 2.x not found: tests are not built (./usp setup installs it)")
endif()

usp_missing_report()
