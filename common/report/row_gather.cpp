#include "common/report/row_gather.hpp"

#include "common/tensor.hpp"

namespace usp::report {

std::vector<std::byte> gather_bytes(Communicator& comm, const void* mine, std::size_t bytes) {
  // Tensors have no byte type: the bytes travel as i32 words, the last one padded with zeros.
  const std::size_t words = (bytes + 3) / 4;
  const auto n = static_cast<std::int64_t>(words);
  Tensor in = Tensor::empty({n}, DType::i32, MemCategory::Temporary);
  if (words > 0) std::memset(in.data<std::int32_t>(), 0, words * 4);
  if (bytes > 0) std::memcpy(in.data<std::int32_t>(), mine, bytes);
  Tensor out = Tensor::empty({comm.size() * n}, DType::i32, MemCategory::Temporary, comm.device());
  comm.all_gather(on_device(in, comm.device()), out);
  const Tensor got = on_device(out, Device::cpu());
  const auto* words_in = reinterpret_cast<const std::byte*>(got.data<std::int32_t>());
  std::vector<std::byte> all(static_cast<std::size_t>(comm.size()) * bytes);
  for (std::size_t r = 0; bytes > 0 && r < static_cast<std::size_t>(comm.size()); ++r)
    std::memcpy(all.data() + r * bytes, words_in + r * words * 4, bytes);
  return all;
}

}  // namespace usp::report
