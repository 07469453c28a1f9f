#include "common/comm/broadcast_double.hpp"

#include <cstring>

namespace usp {

double broadcast_double(Communicator& comm, int root, double value) {
  Tensor bits = Tensor::zeros({2}, DType::i32, MemCategory::Temporary);
  if (comm.rank() == root) std::memcpy(bits.raw(), &value, sizeof value);
  Tensor on_device = bits.to(comm.device(), MemCategory::Temporary);
  comm.broadcast(on_device, root);
  bits.copy_from(on_device);
  double out = 0;
  std::memcpy(&out, bits.raw(), sizeof out);
  return out;
}

}  // namespace usp
