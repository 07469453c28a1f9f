// Exercise 14.2: quantise a tensor to FP8 tile by tile. The contract is in
// chapters/14_mixed_precision/fp8_tiles.hpp; the lesson (chapters/14_mixed_precision/README.md,
// "Exercise 14.2") gives the idea.
//
// Hints:
//  - walk the tile grid (TileGrid::tiles_down / tiles_across); the last tile in each direction
//    may be smaller than tile_rows × tile_cols;
//  - each tile needs its amax before any of its elements can be cast: two sweeps over the tile;
//  - the format's largest finite value is format_info(format).max_finite (common/float_formats.hpp),
//    and float_to_e4m3 / float_to_e5m2 do the rounding;
//  - a tile of zeros must not divide by zero.
#include "chapters/14_mixed_precision/fp8_tiles.hpp"

#include "common/error.hpp"

namespace usp::ch14 {

void quantize_tiles(const float* /*x*/, const TileGrid& /*grid*/, DType /*format*/, std::uint8_t* /*q*/,
                    float* /*scales*/) {
  throw NotImplemented("exercise 14.2: quantize_tiles (FP8 quantisation with one scale per tile)");
}

}  // namespace usp::ch14
