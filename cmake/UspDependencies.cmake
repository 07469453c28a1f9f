# Finds what the course can use and sets USP_HAVE_{CUDA,NCCL,MPI,BLAS}.
# Required: a C++ compiler, nlohmann-json and CLI11. Every other dependency is optional: without MPI the course runs one rank,
# without CUDA it runs on the CPU, without NCCL CUDA tensors are communicated through host memory.
find_package(Threads REQUIRED)

# ---- JSON (nlohmann-json) and the command line (CLI11): header-only, always needed -------------
foreach(pkg nlohmann_json CLI11)
  find_package(${pkg} QUIET)
  if(NOT ${pkg}_FOUND)
    message(FATAL_ERROR "${pkg} not found (Debian: nlohmann-json3-dev, libcli11-dev); run ./usp setup")
  endif()
endforeach()

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

# ---- NCCL: shipped in the CUDA toolkit's directories or installed system-wide ---------------
set(USP_HAVE_NCCL OFF)
if(USP_HAVE_CUDA)
  find_path(USP_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{NCCL_HOME}/include)
  find_library(USP_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} $ENV{NCCL_HOME}/lib)
  if(USP_NCCL_INCLUDE_DIR AND USP_NCCL_LIBRARY)
    set(USP_HAVE_NCCL ON)
    add_library(usp_nccl INTERFACE)
    target_include_directories(usp_nccl INTERFACE ${USP_NCCL_INCLUDE_DIR})
    target_link_libraries(usp_nccl INTERFACE ${USP_NCCL_LIBRARY})
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
endif()

# ---- BLAS for CPU matmuls (OpenBLAS) -----------------------------------------------------------
set(USP_HAVE_BLAS OFF)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS)
if(BLAS_FOUND)
  set(USP_HAVE_BLAS ON)
endif()

# ---- Catch2 2.x (Debian's catch2 package) ------------------------------------------------------
find_package(Catch2 2 QUIET)
if(NOT Catch2_FOUND)
  message(WARNING "Catch2 2.x not found: tests are not built (./usp setup installs it)")
endif()

# ---- Python for the plot scripts -----------------------------------------------------------------
find_package(Python3 COMPONENTS Interpreter)
