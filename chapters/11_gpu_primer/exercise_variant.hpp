// Which bodies of exercises 11.1 and 11.2 a translation unit compiles. Their device code is
// header-only (a kernel can only inline a device function it sees), so the choice between
// solutions/11_gpu_primer/ and exercises/11_gpu_primer/ is made when a file is compiled, not
// when it is linked: chapter 11's library is built once per variant, and each variant sets
// USP_CH11_EXERCISES to 0 (solutions), 1 (exercises) or 2 (the mutant copy that
// `./usp test --mutants` patches, cmake/UspChapter.cmake) for itself and, publicly, for every
// target that links it (chapters/11_gpu_primer/CMakeLists.txt). Both variants sit side by side
// in one build tree; no program links both.
//
// A file that includes coalesced.hpp or smem_tiling.hpp without linking a variant would get a
// silent default; instead it stops here.
#pragma once

#if !defined(USP_CH11_EXERCISES)
#error "USP_CH11_EXERCISES is not set: link one variant of chapter 11's library (chapters/11_gpu_primer/CMakeLists.txt)"
#endif
