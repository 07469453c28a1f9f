// Exercise 12.2: one key tile's whole backward, over every query tile that sees it. The contract
// is in chapters/12_flash_attention/flash_tiles.hpp (key_tile_backward), the idea and the
// questions in the chapter's README ("2. The backward from the log-sum-exp").
// Check your work with: ./usp test 12.2 --exercises
#include <cmath>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"

namespace usp::ch12 {

void key_tile_backward(const KeyTileBackwardIn& in, const KeyTileBackwardOut& out) {
  (void)in, (void)out;
  throw NotImplemented("exercise 12.2: key_tile_backward (hint: which of softmax's quantities can you rebuild "
                       "for one tile of scores from what the forward kept?)");
}

}  // namespace usp::ch12
