// Exercise 14.2: quantise a tensor to FP8 with one scale per tile. The contract (what q and the
// scales must satisfy, and the errors) is in chapters/14_mixed_precision/fp8_tiles.hpp; the idea
// and the questions in the lesson (chapters/14_mixed_precision/README.md, section 5).
// Check your work with: ./usp test 14.2 --exercises
#include "chapters/14_mixed_precision/fp8_tiles.hpp"

#include "common/error.hpp"

namespace usp::ch14 {

void quantize_tiles(const float* x, const TileGrid& grid, DType format, std::uint8_t* q, float* scales) {
  (void)x, (void)grid, (void)format, (void)q, (void)scales;
  throw NotImplemented("exercise 14.2: quantize_tiles (what must one tile's scale be so that its largest value "
                       "uses the whole range of the format?)");
}

}  // namespace usp::ch14
