// Reference solution of exercise 11.1: the coalesced mapping from threads to elements of C.
//
// Split t into a warp index and a lane: t = 32·w + lane (t / 32 and t % 32). Giving the lane
// the column and the warp the row puts a warp's 32 threads on 32 consecutive columns of one
// row: consecutive addresses of B and C, one address of A. (Rung 01 does the opposite — lane
// -> row — and every load of A by a warp touches 32 different rows.)
// Included by chapters/11_gpu_primer/coalesced.hpp, which declares it and states the contract,
// in the solution build of chapter 11's library (USP_CH11_EXERCISES=0).
#pragma once
#include "chapters/11_gpu_primer/coalesced.hpp"

namespace usp::ch11 {

USP_HD Cell coalesced_cell(int bx, int by, int t) {
  return {by * kCoalescedTile + t / kCoalescedTile, bx * kCoalescedTile + t % kCoalescedTile};
}

}  // namespace usp::ch11
