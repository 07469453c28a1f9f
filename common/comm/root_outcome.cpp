#include "common/comm/root_outcome.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>

#include "common/error.hpp"

namespace usp {

namespace {

enum Outcome : std::int32_t { done = 0, usage_error = 1, other_error = 2 };

}  // namespace

void run_on_root(Communicator& comm, const std::string& what_failed, const std::function<void()>& work) {
  Outcome outcome = done;
  std::string message;
  if (comm.rank() == 0) {
    try {
      work();
    } catch (const std::exception& e) {
      outcome = dynamic_cast<const UsageError*>(&e) ? usage_error : other_error;
      message = what_failed + ": " + e.what();
    }
  }
  // [outcome, message bytes]; the message travels packed in i32 words (at least one).
  Tensor head = Tensor::empty({2}, DType::i32);
  head.data<std::int32_t>()[0] = outcome;
  head.data<std::int32_t>()[1] = static_cast<std::int32_t>(message.size());
  comm.broadcast(head, 0);
  const auto got = static_cast<Outcome>(head.data<std::int32_t>()[0]);
  if (got == done) return;
  const auto bytes = static_cast<std::size_t>(head.data<std::int32_t>()[1]);
  Tensor text = Tensor::zeros({std::max<std::int64_t>(1, static_cast<std::int64_t>((bytes + 3) / 4))}, DType::i32);
  if (comm.rank() == 0) std::memcpy(text.raw(), message.data(), bytes);
  comm.broadcast(text, 0);
  const std::string what(static_cast<const char*>(text.raw()), bytes);
  if (got == usage_error) throw UsageError(what);
  throw Error(what);
}

}  // namespace usp
