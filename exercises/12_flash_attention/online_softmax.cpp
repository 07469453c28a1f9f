// Exercise 12.1: the online softmax of one key tile. The contract is in
// chapters/12_flash_attention/flash_tiles.hpp, the idea in the chapter's README ("Exercise 12.1").
#include <cmath>
#include <limits>

#include "chapters/12_flash_attention/flash_tiles.hpp"
#include "common/error.hpp"

namespace usp::ch12 {

void online_softmax_update(float* s, const float* v, int rows, int cols, int d, float* m, float* l, float* acc) {
  (void)s, (void)v, (void)rows, (void)cols, (void)d, (void)m, (void)l, (void)acc;
  // TODO: per row, the tile's maximum, the new running maximum, rescale l and acc by
  // exp(m_old - m_new), turn s into exp(s - m_new) and add it to l; then acc += p·v (a loop, or
  // ops::detail::sgemm from common/ops/gemm.hpp).
  throw NotImplemented("exercise 12.1: online_softmax_update (fold one key tile into the running softmax)");
}

}  // namespace usp::ch12
