// Exercise 12.1: one query tile's forward over every key tile, with the online softmax. The
// contract is in chapters/12_flash_attention/flash_tiles.hpp (flash_query_tile), the idea and the
// questions in the chapter's README ("1. The online softmax").
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"

namespace usp::ch12 {

void flash_query_tile(const QueryTileIn& in, float* out, float* lse) {
  (void)in, (void)out, (void)lse;
  throw NotImplemented("exercise 12.1: flash_query_tile (hint: what must you keep per row so that a tile of "
                       "keys can be folded in and forgotten?)");
}

}  // namespace usp::ch12
