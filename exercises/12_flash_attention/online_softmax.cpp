// Exercise 12.1: the online softmax of one key tile. The contract is in
// chapters/12_flash_attention/flash_tiles.hpp, the idea in the chapter's README ("Exercise 12.1").
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"

namespace usp::ch12 {

void online_softmax_update(float* s, const float* v, int rows, int cols, int d, float* m, float* l, float* acc) {
  (void)s, (void)v, (void)rows, (void)cols, (void)d, (void)m, (void)l, (void)acc;
  // Your code: the contract (what m, l, acc and s mean before and after) is in flash_tiles.hpp.
  throw NotImplemented("exercise 12.1: online_softmax_update (fold one key tile into the running softmax)");
}

}  // namespace usp::ch12
