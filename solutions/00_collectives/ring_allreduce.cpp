// Reference solution of exercise 00.1: all-reduce on a ring, from point-to-point messages only.
//
// Picture 4 ranks holding a tensor cut into 4 chunks A B C D. Every step, every rank passes one
// chunk to its right neighbour and takes one from its left, so all links are busy at once.
//
//   reduce-scatter (n-1 steps): the chunk a rank receives is added to its own copy and passed
//   on at the next step; after n-1 hops one chunk per rank has collected all n contributions.
//   all-gather (n-1 steps): the finished chunks travel once more around the ring, each rank
//   overwriting its stale copy, until every rank holds every finished chunk.
//
// Each step moves 1/n of the tensor per rank, and there are 2(n-1) steps: a rank sends
// 2(n-1)/n of the tensor in total, whatever n is. That is why the ring is bandwidth-optimal.
#include "chapters/00_collectives/ring_allreduce.hpp"

namespace usp::ch00 {

namespace {

// (a mod n) for a possibly negative a: chunk indices wrap around the ring.
int wrap(int a, int n) { return ((a % n) + n) % n; }

// Chunk i of t as a 1-d view (no copy): what a ring step sends or overwrites.
Tensor chunk_view(const Tensor& t, int n, int i) {
  const auto [begin, end] = ring_chunk(t.numel(), n, i);
  return t.view(begin, {end - begin});
}

// dst += src, element by element (both f32, same numel, on the CPU).
void add_into(Tensor& dst, const Tensor& src) {
  float* d = dst.data<float>();
  const float* s = src.data<float>();
  const std::int64_t count = dst.numel();
  for (std::int64_t i = 0; i < count; ++i) d[i] += s[i];
}

}  // namespace

void ring_all_reduce(Communicator& comm, Tensor& t) {
  const int n = comm.size(), r = comm.rank();
  USP_CHECK(t.dtype() == DType::f32, "ring_all_reduce: expects an f32 tensor");
  USP_CHECK(t.device().is_cpu(), "ring_all_reduce: adds chunks on the host, so t must be a CPU tensor");
  if (n == 1) return;  // a ring of one: the tensor already is the sum

  Tensor flat = t.flatten();
  const int right = (r + 1) % n, left = (r - 1 + n) % n;

  // One receive buffer for the whole reduce-scatter, as large as the largest chunk (chunk 0).
  // Allocating it once, not once per step, keeps the steps pure communication + addition.
  const auto [first, last] = ring_chunk(flat.numel(), n, 0);
  Tensor incoming = Tensor::empty({last - first}, DType::f32, MemCategory::CommBuffer, t.device());

  // 1. Reduce-scatter. At step k we pass on chunk (r-k), which already holds k+1 contributions
  //    (ours plus the k our left neighbours added), and add our value into chunk (r-k-1).
  for (int k = 0; k < n - 1; ++k) {
    const Tensor outgoing = chunk_view(flat, n, wrap(r - k, n));
    Tensor target = chunk_view(flat, n, wrap(r - k - 1, n));
    Tensor received = incoming.view(0, {target.numel()});  // chunks differ by up to one element
    comm.sendrecv(outgoing, right, received, left);
    add_into(target, received);
  }
  // Now chunk (r+1) of our copy is complete: it holds the sum over all n ranks.

  // 2. All-gather. At step k we pass on the complete chunk (r+1-k) and receive the complete
  //    chunk (r-k) straight into place: nothing to add, so no buffer is needed.
  for (int k = 0; k < n - 1; ++k) {
    const Tensor outgoing = chunk_view(flat, n, wrap(r + 1 - k, n));
    Tensor target = chunk_view(flat, n, wrap(r - k, n));
    comm.sendrecv(outgoing, right, target, left);
  }
}

}  // namespace usp::ch00
