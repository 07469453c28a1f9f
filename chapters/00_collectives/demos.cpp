#include "chapters/00_collectives/demos.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>

namespace usp::ch00 {

namespace {

// t moved to the device comm works with (a no-op for MPI, whose tensors live on the CPU).
Tensor on_comm_device(const Communicator& comm, const Tensor& t) {
  return t.device() == comm.device() ? t : t.to(comm.device());
}

// A 1-d f32 tensor holding values, on comm's device.
Tensor make_tensor(const Communicator& comm, const std::vector<float>& values) {
  return on_comm_device(comm, Tensor::from_floats(values, {static_cast<std::int64_t>(values.size())}));
}

// [1,2,3,4,5]·scale: the tensor A0 uses for broadcast, reduce and all-reduce.
std::vector<float> one_to_five(float scale) {
  std::vector<float> v;
  for (int i = 1; i <= 5; ++i) v.push_back(static_cast<float>(i) * scale);
  return v;
}

// ones(5)·value: the tensor A0 uses for gather, all-gather and scatter.
std::vector<float> ones5(float value) { return std::vector<float>(5, value); }

// A flat tensor of `parts` equal chunks, seen as the list of its chunks' values.
Held split(const Tensor& flat, int parts) {
  const std::vector<float> all = flat.to_floats();
  const std::size_t each = all.size() / static_cast<std::size_t>(parts);
  Held held;
  for (int p = 0; p < parts; ++p)
    held.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(p * each),
                      all.begin() + static_cast<std::ptrdiff_t>((p + 1) * each));
  return held;
}

// The concatenation of a list of tensors' values: how a list travels in one flat buffer.
std::vector<float> concat(const Held& held) {
  std::vector<float> flat;
  for (const auto& part : held) flat.insert(flat.end(), part.begin(), part.end());
  return flat;
}

std::string number_str(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

std::string values_str(const std::vector<float>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + number_str(values[i]);
  return s + "]";
}

std::string seconds_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// This rank's "before" and "after" lines of a demo, worded like A0's printouts.
std::string before_line(const DemoOutcome& o, int rank) {
  if (o.collective == "barrier")
    return "Rank " + std::to_string(rank) + " sleeps " + seconds_str(o.before.at(0).at(0)) +
           ", then waits at the barrier";
  return "Before " + o.collective + " on rank " + std::to_string(rank) + ": " + held_str(o.before);
}

std::string after_line(const DemoOutcome& o, int rank) {
  if (o.collective == "barrier")
    return "Rank " + std::to_string(rank) + " leaves the barrier after " + seconds_str(o.after.at(0).at(0));
  return "After " + o.collective + " on rank " + std::to_string(rank) + ": " + held_str(o.after);
}

}  // namespace

std::string held_str(const Held& held) {
  if (held.empty()) return "-";
  if (held.size() == 1) return values_str(held[0]);
  std::string s = "[";
  for (std::size_t i = 0; i < held.size(); ++i) s += (i ? ", " : "") + values_str(held[i]);
  return s + "]";
}

// ---- the demos ---------------------------------------------------------------------------------

DemoOutcome demo_broadcast(Communicator& comm) {
  const int r = comm.rank();
  Tensor t = make_tensor(comm, r == 0 ? one_to_five(1) : std::vector<float>(5, 0.0f));
  DemoOutcome o{"broadcast", "rank 0 holds [1, 2, 3, 4, 5], the others zeros(5); broadcast from rank 0", {}, {}};
  o.before = {t.to_floats()};
  comm.broadcast(t, /*root=*/0);
  o.after = {t.to_floats()};
  return o;
}

DemoOutcome demo_reduce(Communicator& comm) {
  const int r = comm.rank();
  Tensor t = make_tensor(comm, one_to_five(static_cast<float>(r + 1)));
  DemoOutcome o{"reduce", "rank r holds [1, 2, 3, 4, 5]*(r+1); sum onto rank 0 (only rank 0's tensor is the result)", {}, {}};
  o.before = {t.to_floats()};
  comm.reduce(t, /*root=*/0, ReduceOp::sum);
  o.after = {t.to_floats()};
  return o;
}

DemoOutcome demo_all_reduce(Communicator& comm) {
  const int r = comm.rank();
  Tensor t = make_tensor(comm, one_to_five(static_cast<float>(r + 1)));
  DemoOutcome o{"all_reduce", "rank r holds [1, 2, 3, 4, 5]*(r+1); sum onto every rank", {}, {}};
  o.before = {t.to_floats()};
  comm.all_reduce(t, ReduceOp::sum);
  o.after = {t.to_floats()};
  return o;
}

DemoOutcome demo_gather(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  Tensor t = make_tensor(comm, ones5(static_cast<float>(r + 1)));
  // The root's output holds n tensors of 5 back to back: rank j's lands at [5j, 5j+5).
  Tensor gathered = make_tensor(comm, std::vector<float>(5 * static_cast<std::size_t>(n), 0.0f));
  DemoOutcome o{"gather", "rank r holds ones(5)*(r+1); gather onto rank 0", {}, {}};
  o.before = {t.to_floats()};
  comm.gather(t, gathered, /*root=*/0);
  // Only the root received anything; the others still hold just their own tensor.
  o.after = r == 0 ? split(gathered, n) : Held{t.to_floats()};
  return o;
}

DemoOutcome demo_all_gather(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  Tensor t = make_tensor(comm, ones5(static_cast<float>(r + 1)));
  Tensor gathered = make_tensor(comm, std::vector<float>(5 * static_cast<std::size_t>(n), 0.0f));
  DemoOutcome o{"all_gather", "rank r holds ones(5)*(r+1); gather onto every rank", {}, {}};
  o.before = {t.to_floats()};
  comm.all_gather(t, gathered);
  o.after = split(gathered, n);
  return o;
}

DemoOutcome demo_scatter(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  // The root's list: tensor j is ones(5)*(j+1), meant for rank j. Only the root's list is read,
  // but every rank passes a buffer of the same shape.
  Held list;
  for (int j = 0; j < n; ++j) list.push_back(ones5(static_cast<float>(j + 1)));
  Tensor in = make_tensor(comm, r == 0 ? concat(list) : std::vector<float>(5 * static_cast<std::size_t>(n), 0.0f));
  Tensor out = make_tensor(comm, std::vector<float>(5, 0.0f));
  DemoOutcome o{"scatter", "rank 0 holds n tensors, the j-th ones(5)*(j+1); scatter from rank 0", {}, {}};
  o.before = r == 0 ? list : Held{out.to_floats()};
  comm.scatter(in, out, /*root=*/0);
  o.after = {out.to_floats()};
  return o;
}

DemoOutcome demo_reduce_scatter(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  // Rank r's j-th tensor is [(r+1)*1, (r+1)*2] to the power j+1. Every value is an integer
  // below 2^24 for n <= 5, so the sums are exact in fp32.
  Held list;
  for (int j = 0; j < n; ++j) {
    std::vector<float> part;
    for (int i = 1; i <= 2; ++i) part.push_back(static_cast<float>(std::pow((r + 1) * i, j + 1)));
    list.push_back(part);
  }
  Tensor in = make_tensor(comm, concat(list));  // [n * 2]
  Tensor out = make_tensor(comm, {0.0f, 0.0f});  // [2]: the sum of everyone's r-th tensor
  DemoOutcome o{"reduce_scatter", "rank r holds n tensors, the j-th [(r+1)*1, (r+1)*2]^(j+1); rank j gets the sum of the j-th", {}, {}};
  o.before = list;
  comm.reduce_scatter(in, out, ReduceOp::sum);
  o.after = {out.to_floats()};
  return o;
}

DemoOutcome demo_barrier(Communicator& comm, double step_seconds) {
  using clock = std::chrono::steady_clock;
  const int r = comm.rank();
  const double sleep_s = r * step_seconds;
  comm.barrier();  // start the clocks together
  const auto start = clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
  comm.barrier();  // nobody passes until the slowest rank (the last one) arrives
  const double waited = std::chrono::duration<double>(clock::now() - start).count();
  DemoOutcome o{"barrier", "rank r sleeps r*" + seconds_str(step_seconds) + ", then calls barrier", {}, {}};
  o.before = {{static_cast<float>(sleep_s)}};
  o.after = {{static_cast<float>(waited)}};
  return o;
}

DemoOutcome demo_all_to_all(Communicator& comm) {
  const int n = comm.size(), r = comm.rank();
  std::vector<float> mine;
  for (int j = 0; j < n; ++j) mine.push_back(static_cast<float>(10 * (r + 1) + (j + 1)));
  Tensor in = make_tensor(comm, mine);  // [n]: element j is for rank j
  Tensor out = make_tensor(comm, std::vector<float>(static_cast<std::size_t>(n), 0.0f));
  DemoOutcome o{"all_to_all", "rank r holds [10(r+1) + (j+1) for j < n]; element j goes to rank j", {}, {}};
  o.before = {in.to_floats()};
  comm.all_to_all(in, out);  // out[i] came from rank i
  o.after = {out.to_floats()};
  return o;
}

// ---- printing -------------------------------------------------------------------------------

std::vector<std::string> gather_strings(Communicator& comm, const std::string& mine) {
  const int n = comm.size();
  // 1. Every rank learns every length, so that all can size the same padded buffers.
  Tensor my_length = Tensor::empty({1}, DType::i32);
  my_length.data<std::int32_t>()[0] = static_cast<std::int32_t>(mine.size());
  my_length = on_comm_device(comm, my_length);
  Tensor lengths = on_comm_device(comm, Tensor::empty({n}, DType::i32));
  comm.all_gather(my_length, lengths);
  const Tensor host_lengths = lengths.to(Device::cpu());
  const std::int32_t* length = host_lengths.data<std::int32_t>();
  const std::int64_t longest = std::max<std::int64_t>(1, *std::max_element(length, length + n));

  // 2. Each rank's characters, one per i32 element, padded to the longest: [longest] per rank,
  //    [n * longest] on rank 0.
  Tensor chars = Tensor::zeros({longest}, DType::i32);
  std::copy(mine.begin(), mine.end(), chars.data<std::int32_t>());
  chars = on_comm_device(comm, chars);
  Tensor all = on_comm_device(comm, Tensor::zeros({n * longest}, DType::i32));
  comm.gather(chars, all, /*root=*/0);
  if (comm.rank() != 0) return {};

  const Tensor host_all = all.to(Device::cpu());
  const std::int32_t* code = host_all.data<std::int32_t>();
  std::vector<std::string> strings;
  for (int p = 0; p < n; ++p) strings.emplace_back(code + p * longest, code + p * longest + length[p]);
  return strings;
}

void print_demo(Communicator& comm, const DemoOutcome& outcome, std::ostream& out) {
  const int r = comm.rank();
  const std::vector<std::string> before = gather_strings(comm, before_line(outcome, r));
  const std::vector<std::string> after = gather_strings(comm, after_line(outcome, r));
  if (r != 0) return;
  out << "== " << outcome.collective << " (" << comm.size() << " ranks) ==\n" << outcome.setup << "\n";
  for (const auto& line : before) out << "  " << line << "\n";
  for (const auto& line : after) out << "  " << line << "\n";
  out << "\n" << std::flush;
}

std::vector<DemoOutcome> run_demos(Communicator& comm, std::ostream& out, double barrier_step_seconds) {
  std::vector<DemoOutcome> outcomes;
  auto show = [&](DemoOutcome o) {
    print_demo(comm, o, out);
    outcomes.push_back(std::move(o));
  };
  show(demo_broadcast(comm));
  show(demo_reduce(comm));
  show(demo_all_reduce(comm));
  show(demo_gather(comm));
  show(demo_all_gather(comm));
  show(demo_scatter(comm));
  show(demo_reduce_scatter(comm));
  show(demo_barrier(comm, barrier_step_seconds));
  show(demo_all_to_all(comm));
  return outcomes;
}

}  // namespace usp::ch00
