// Exercise 12.2: the backward of one (query tile, key tile) pair. The contract is in
// chapters/12_flash_attention/flash_tiles.hpp, the idea in the chapter's README ("Exercise 12.2").
#include <cmath>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"

namespace usp::ch12 {

void tile_backward(const TileBackwardIn& in, const TileBackwardOut& out) {
  (void)in, (void)out;
  // Your code: the contract is in flash_tiles.hpp; the questions that lead to the formulas are in
  // the chapter's README, section 2.
  throw NotImplemented("exercise 12.2: tile_backward (one tile pair of the backward from the saved log-sum-exp)");
}

}  // namespace usp::ch12
