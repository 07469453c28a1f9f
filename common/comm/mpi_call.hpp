// How the MPI backend calls MPI: return codes become usp::Error, and one process-wide lock
// serialises every MPI call when the library cannot take calls from several threads at once.
//
// Thread levels. Each MPI communicator runs its ops on its own progress thread, so a process
// with a world and a few split groups calls MPI from several threads concurrently. That needs
// MPI_THREAD_MULTIPLE, which the Runtime asks for and Open MPI and MPICH provide. If the library
// grants less (or USP_MPI_SERIALIZE=1 is set, to test this path), every MPI call of every
// communicator takes the lock below. Collectives then run as their non-blocking forms
// (MPI_Iallreduce ...) polled with the lock released between polls, because a thread blocked
// inside MPI_Allreduce while holding the lock would stop the other communicators of the rank,
// and with them, possibly, the ranks this all-reduce waits for. (MPI_Comm_split has no
// non-blocking form and holds the lock while it runs.) Below MPI_THREAD_SERIALIZED the progress
// threads are outside what the standard promises; a warning says so once.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <mutex>
#include <string>

namespace usp::mpi {

// Throws usp::Error("<call> failed: <MPI's error string>") unless rc is MPI_SUCCESS.
void check(int rc, const char* call);
// MPI's text for an error code.
std::string error_string(int rc);

// True when MPI calls go through the process-wide lock (see above). Decided at the first call,
// which must come after MPI_Init.
bool serialized();

// Holds the process-wide MPI lock while alive if serialized(), and nothing otherwise.
class Lock {
 public:
  Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  std::unique_lock<std::mutex> lock_;
};

// The most elements one MPI call is given. MPI counts are ints: bigger buffers are split into
// several calls where the op allows it (broadcast, reduce, all_reduce, send, recv) and refused
// with a clear error elsewhere. Tests lower it to exercise the splitting on small buffers.
std::int64_t max_count();
void set_max_count(std::int64_t n);  // clamped to [1, INT_MAX]

}  // namespace usp::mpi
