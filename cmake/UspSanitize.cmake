# USP_SANITIZE=ON: every C++ file of the project compiled and linked with AddressSanitizer and
# UndefinedBehaviorSanitizer, stopping at the first report (-fno-sanitize-recover: a UB report is
# an abort, not a line in a log). The preset "sanitize" (CMakePresets.json) and `./usp test
# --sanitize` configure build-sanitize/ this way; at run time ./usp sets ASAN_OPTIONS and
# UBSAN_OPTIONS (halt on the first error, stack traces). CPU paths only: nvcc does not take these
# flags for device code, so a sanitized build with CUDA is refused. The preset compiles at -O1 with
# line tables only (-g1): what ASan's reports need (function, file and line of every frame), at
# less than half the compile time of -O2 -g on the same files.
set(USP_SANITIZE OFF CACHE BOOL "build with AddressSanitizer + UndefinedBehaviorSanitizer (CPU paths only)")
if(USP_SANITIZE)
  if(USP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "USP_SANITIZE=ON builds the CPU paths only: configure with -DUSP_CUDA=OFF "
                        "(the preset 'sanitize' does)")
  endif()
  set(USP_CUDA OFF CACHE STRING "build CUDA paths: AUTO, ON or OFF" FORCE)
  set(usp_sanitize_flags -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${usp_sanitize_flags}>")
  # ASan's instrumentation makes GCC 12 see "maybe uninitialized" members inside libstdc++'s
  # <regex> (std::function in its NFA states: 14 warnings, all in the library's headers), and an
  # impossible overlapping memcpy inside std::string's operator= (-Wrestrict, GCC bug 105329: one
  # warning, tests/ch04_data_parallel/test_bucket_plan.cpp). The plain build keeps both warnings;
  # only this tree drops them.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>" "$<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>")
  add_link_options(${usp_sanitize_flags})
  set(USP_TIMEOUT_SCALE 4)  # tests/CMakeLists.txt: every test's time limit, x4
else()
  set(USP_TIMEOUT_SCALE 1)
endif()
