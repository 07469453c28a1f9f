#include "common/comm/collective_shapes.hpp"

#include <string>

#include "common/error.hpp"

namespace usp::collective_shapes {

void same_dtype(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw Error(std::string(op) + ": input is " + dtype_name(a.dtype()) + " but output is " +
                dtype_name(b.dtype()) + " (they must match)");
}

void whole_is_n_parts(const char* op, const char* whole_name, const Tensor& whole,
                      const char* part_name, const Tensor& part, int n) {
  same_dtype(op, part, whole);
  if (whole.numel() != static_cast<std::int64_t>(n) * part.numel())
    throw Error(std::string(op) + ": " + whole_name + " has " + std::to_string(whole.numel()) +
                " elements but must hold size() x " + part_name + " = " + std::to_string(n) + " x " +
                std::to_string(part.numel()));
}

void all_to_all(const Tensor& in, const Tensor& out, int n) {
  same_dtype("all_to_all", in, out);
  if (in.numel() != out.numel() || in.numel() % n != 0)
    throw Error("all_to_all: in (" + std::to_string(in.numel()) + " elements) and out (" +
                std::to_string(out.numel()) + ") must be equal and split into size() = " +
                std::to_string(n) + " equal chunks");
}

namespace {
void check_counts(const char* which, const std::vector<std::int64_t>& counts, const char* tensor,
                  std::int64_t numel, int n) {
  if (static_cast<int>(counts.size()) != n)
    throw Error(std::string("all_to_allv: ") + which + " has " + std::to_string(counts.size()) +
                " entries, one per rank expected (" + std::to_string(n) + ")");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0)
      throw Error(std::string("all_to_allv: ") + which + "[" + std::to_string(i) + "] is negative (" +
                  std::to_string(counts[i]) + ")");
    total += counts[i];
  }
  if (total != numel)
    throw Error(std::string("all_to_allv: ") + which + " sum to " + std::to_string(total) + " but " +
                tensor + " has " + std::to_string(numel) + " elements");
}
}  // namespace

void all_to_allv(const Tensor& in, const std::vector<std::int64_t>& send_counts, const Tensor& out,
                 const std::vector<std::int64_t>& recv_counts, int n, int rank) {
  same_dtype("all_to_allv", in, out);
  check_counts("send_counts", send_counts, "in", in.numel(), n);
  check_counts("recv_counts", recv_counts, "out", out.numel(), n);
  const auto me = static_cast<std::size_t>(rank);
  if (send_counts[me] != recv_counts[me])
    throw Error("all_to_allv: this rank sends itself " + std::to_string(send_counts[me]) +
                " elements but expects " + std::to_string(recv_counts[me]));
}

void tag(const char* op, int tag) {
  if (tag < 0) throw Error(std::string(op) + ": tag " + std::to_string(tag) + " is negative");
}

}  // namespace usp::collective_shapes
