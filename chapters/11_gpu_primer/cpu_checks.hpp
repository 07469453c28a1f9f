// The CPU checks the rung 02, 03 and 04 launchers run before their first launch: an exercise's
// device code is first tried where a mistake is easy to read. Each returns normally when the
// exercise behaves, lets a stub's usp::NotImplemented through, and otherwise throws usp::Error
// naming the first thing that is wrong. The tests check the same properties more thoroughly.
#pragma once

namespace usp::ch11 {

// coalesced_cell on block (1, 2): coverage (a) and coalescing (b) of coalesced.hpp; then
// coalesced_thread over the whole grid of a 45×37×70 problem of small integers against
// matmul_triple_loop, element by element.
void check_coalesced_on_cpu();
// emulate_smem_tiling with rung 03's and rung 04's tiles on a 45×37×70 problem of small integers
// (so every summation order gives the exact result) against matmul_triple_loop, element by element.
void check_smem_tiling_on_cpu();

}  // namespace usp::ch11
