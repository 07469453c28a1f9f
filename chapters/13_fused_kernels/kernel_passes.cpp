#include "chapters/13_fused_kernels/kernel_passes.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/error.hpp"

namespace usp::ch13 {

namespace {

std::int64_t total_bytes(const std::vector<Tensor>& ts) {
  std::int64_t b = 0;
  for (const Tensor& t : ts) b += static_cast<std::int64_t>(t.nbytes());
  return b;
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.shares_storage_with(b) && a.offset() == b.offset() && a.numel() == b.numel();
}

bool listed(const std::vector<Tensor>& list, const Tensor& t) {
  return std::any_of(list.begin(), list.end(), [&](const Tensor& x) { return same_tensor(x, t); });
}

}  // namespace

std::int64_t Pass::bytes() const {
  std::int64_t b = total_bytes(reads) + total_bytes(writes);
  for (const auto& [t, elements] : gathers) b += elements * static_cast<std::int64_t>(dtype_size(t.dtype()));
  return b;
}

std::int64_t Variant::bytes() const {
  std::int64_t b = 0;
  for (const Pass& p : passes) b += p.bytes();
  return b;
}

std::int64_t Variant::scratch_bytes() const { return total_bytes(scratch); }

void Variant::run() const {
  for (const Pass& p : passes) p.run();
}

const Variant& Chain::variant(const std::string& variant_name) const {
  for (const Variant& v : variants)
    if (v.name == variant_name) return v;
  throw Error("chain " + name + " has no variant '" + variant_name + "'");
}

std::vector<std::vector<float>> run_outputs(const Chain& chain, const Variant& variant) {
  chain.reset();
  variant.run();
  std::vector<std::vector<float>> out;
  for (const Tensor& t : chain.outputs) out.push_back(t.to_floats());
  return out;
}

std::string touched_outside_declared(const Chain& chain, const Variant& variant, std::size_t pass_index) {
  USP_CHECK(pass_index < variant.passes.size(), "touched_outside_declared: no pass " + std::to_string(pass_index));
  chain.reset();
  for (std::size_t i = 0; i < pass_index; ++i) variant.passes[i].run();  // the state this pass starts from
  const Pass& pass = variant.passes[pass_index];

  std::vector<Tensor> all = chain.inputs;
  for (const Tensor& t : chain.outputs) all.push_back(t);
  for (const Tensor& t : variant.scratch) all.push_back(t);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Saved {
    Tensor t;
    std::vector<float> before;
    bool declared_write;
  };
  std::vector<Saved> poisoned;
  for (const Tensor& t : all) {
    if (t.dtype() != DType::f32) continue;  // targets (i32) cannot hold a NaN
    const bool read = listed(pass.reads, t) || std::any_of(pass.gathers.begin(), pass.gathers.end(),
                                                            [&](const auto& g) { return same_tensor(g.first, t); });
    const bool written = listed(pass.writes, t);
    if (read) continue;
    if (std::any_of(poisoned.begin(), poisoned.end(), [&](const Saved& s) { return same_tensor(s.t, t); })) continue;
    poisoned.push_back({t, t.to_floats(), written});
    Tensor target = t;
    target.fill(nan);
  }
  pass.run();

  std::string problem;
  for (const Tensor& t : pass.writes) {
    if (t.dtype() != DType::f32) continue;
    const float* p = t.data<float>();
    for (std::int64_t i = 0; i < t.numel(); ++i)
      if (std::isnan(p[i])) {
        problem = pass.kernel + ": element " + std::to_string(i) + " of a declared output of " +
                  std::to_string(t.numel()) + " is NaN (an undeclared read, or an element never written)";
        break;
      }
    if (!problem.empty()) break;
  }
  for (Saved& s : poisoned) {
    if (problem.empty() && !s.declared_write) {
      const float* p = s.t.data<float>();
      for (std::int64_t i = 0; i < s.t.numel(); ++i)
        if (!std::isnan(p[i])) {
          problem = pass.kernel + ": wrote element " + std::to_string(i) + " of a tensor of " +
                    std::to_string(s.t.numel()) + " it does not declare";
          break;
        }
    }
    std::memcpy(s.t.data<float>(), s.before.data(), s.before.size() * sizeof(float));
  }
  chain.reset();
  return problem;
}

}  // namespace usp::ch13
