# usp_cuda_target(target): what a target with .cu files adds to the project-wide CUDA settings
# (architectures 80;90, C++ standard and shared runtime are set in UspDependencies.cmake):
#   * -lineinfo, so Nsight Compute shows each kernel's source lines (no run-time cost).
function(usp_cuda_target target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
endfunction()
