// Constructors of the communicator backends. Runtime::make_world picks among them; chapters
// normally never call these directly.
#pragma once
#include <memory>

#include "common/comm/communicator.hpp"

namespace usp {

// One rank, no MPI: every collective is a local copy (size() == 1). For CPU or CUDA tensors.
std::unique_ptr<Communicator> make_self_communicator(Device device);

#if defined(USP_HAVE_MPI)
// MPI_COMM_WORLD (duplicated) over CPU tensors, with its own progress thread.
std::unique_ptr<Communicator> make_mpi_world();
#endif

#if defined(USP_HAVE_MPI)
// CUDA tensors (or the emulated device's, Device::emulated()) through host memory: each op copies
// to a host staging buffer (CommBuffer category), runs on `cpu_comm`'s ranks over MPI, and copies
// back. Works when ranks share a GPU.
std::unique_ptr<Communicator> make_host_staged(std::unique_ptr<Communicator> cpu_comm, Device device);
#endif

#if defined(USP_HAVE_NCCL) && defined(USP_HAVE_MPI)
// NCCL over the ranks of `bootstrap` (an MPI communicator broadcasts the ncclUniqueId).
// Ops run on a communication stream; Work::wait() orders the compute stream after them.
std::unique_ptr<Communicator> make_nccl(Communicator& bootstrap, Device device);
#endif

}  // namespace usp
