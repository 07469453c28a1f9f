// Runtime: the process's place in the job (MPI init/finalize, rank, world communicator) and
// the course's rule for failures:
//   * a bad configuration is found by every rank at an agreement point (parse, require); the
//     lowest failing rank prints "error: <message>" once and every rank exits 2, cleanly;
//   * any other exception, on any rank, prints "[rank r] fatal: <message>" and aborts the
//     whole job (MPI_Abort): every rank exits non-zero within seconds, none waits forever;
//   * a rank that waits on others longer than USP_COMM_TIMEOUT seconds (a deadlock, a rank
//     stuck or stopped) ends the job with a message naming what it waited for (the
//     communication watchdog, common/comm/watchdog.hpp; a bad USP_COMM_TIMEOUT is a
//     configuration error, reported once).
// A chapter's main is
//   int main(int argc, char** argv) {
//     return usp::run(argc, argv, [&](usp::Runtime& rt) {
//       usp::Cli cli("ch00_collectives", "...");  cli.add_common("out/00_collectives");
//       if (!rt.parse(cli, argc, argv)) return 0;  // --help printed
//       rt.require(rt.size() >= 2, "chapter 00 needs at least 2 ranks (mpirun -np 4 ...)");
//       ...
//       return 0;
//     });
//   }
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "common/cli.hpp"
#include "common/comm/communicator.hpp"
#include "common/comm/watchdog.hpp"

namespace usp {

// Thrown by agreement points once every rank knows the job must stop; run() returns code.
struct CollectiveExit {
  int code;
};

class Runtime {
 public:
  // Throws CollectiveExit{2} (after shutting MPI down) when the environment is bad on any rank.
  Runtime(int& argc, char**& argv);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank among the processes of this node (MPI_COMM_TYPE_SHARED). A job on more than one node
  // says at start-up where its ranks found themselves (rank 0, one line on stderr):
  //   [usp] 4 ranks on 2 nodes (node-local ranks from MPI_COMM_TYPE_SHARED): ranks [0,1] local [0,1]; ...
  int local_rank() const { return local_rank_; }
  bool is_root() const { return rank_ == 0; }
  bool mpi() const;                                // MPI compiled in and initialised

  // The world over CPU tensors (MPI, or a one-rank "self" communicator without MPI).
  Communicator& world() { return *world_; }
  // A world communicator for tensors on `device` (NCCL, host-staged MPI, or the CPU world's
  // backend); collective. Throws UsageError if the backend cannot serve the device.
  std::unique_ptr<Communicator> make_world(Device device, CommBackend backend = CommBackend::automatic);
  // What a chapter's tensors travel over on `device`: null on the CPU (world() serves them),
  // else make_world(device, backend) agreed on by every rank (a refused backend stops the job
  // once, as agree does). Every device but the CPU, the emulated cpu:1 included, gets its own.
  std::unique_ptr<Communicator> device_world(Device device, CommBackend backend);

  // Agreement points (collective: every rank calls them in the same order).
  // parse: returns false after --help was printed (by rank 0); throws CollectiveExit{2} after
  // a bad flag was reported, or when the program's --out directory (or --save, when given) cannot be written.
  bool parse(Cli& cli, int argc, const char* const* argv);
  // Stops the job with message when cond is false on any rank.
  void require(bool cond, const std::string& message);
  // Runs step on every rank; a UsageError thrown on any rank stops the job as in require.
  void agree(const std::function<void()>& step);
  // Runs a part of a chapter that calls an exercise. Returns "" when it completed on every rank;
  // when the exercise stub throws NotImplemented on every rank, returns its message on every
  // rank (the part is skipped together). A NotImplemented on some ranks only is a bug in the
  // exercise: the job ends with a message naming those ranks, never a rank left waiting (see
  // runtime.cpp for how, when the other ranks are stuck inside the part).
  std::string skip_if_not_implemented(const std::function<void()>& part);

  // Aborts every rank of the job with code (MPI_Abort); prints nothing itself.
  [[noreturn]] void abort(int code);

  // A failure outside an agreement point (run() calls it for an exception that escaped the
  // body): line is the message without a rank ("fatal: ..." or "error: ..."). When every rank
  // fails within a short grace period with the same line (a bad value every rank read, a loss
  // every rank saw diverge), one rank prints it once, naming no rank, and code is returned on
  // every rank (no MPI_Abort). Otherwise — some rank still working, or waiting for this one —
  // this rank prints "[rank r] line" and aborts the job. Over failure_, a communicator nothing
  // else uses.
  int fail_together(const std::string& line, int code);

 private:
  // Collective: whether any two ranks of the job drive the same physical GPU (the same answer on
  // every rank, so that every rank picks the same backend).
  bool ranks_share_gpu(Device device);
  // The watchdog's view of a wait on every other rank of the world (start-up, shut-down).
  watchdog::Subject world_wait(const char* what) const;
  // agree over comm: agree() goes over the world (its all-reduce is part of the world's traffic
  // that chapters report, as it always was); the start-up check over control_.
  void agree_on(Communicator& comm, const std::function<void()>& step);
  // Frees the communicators and finalises MPI (if this Runtime initialised it).
  void shutdown();

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  bool owns_mpi_ = false;
  std::unique_ptr<Communicator> world_;
  // Agreements about the chapter's own progress (skip_if_not_implemented) go over this
  // duplicate of the world: never over a communicator a failed part may have left ops on.
  std::unique_ptr<Communicator> control_;
  // Only fail_together's agreement goes over this one: a failing rank may reach it while a
  // healthy one is inside an agreement over control_.
  std::unique_ptr<Communicator> failure_;
};

// Runs body with a Runtime and applies the failure rule above; returns the process exit code.
int run(int argc, char** argv, const std::function<int(Runtime&)>& body);

// The same for a chapter whose body is a function of the command line, the form the chapters'
// mains take:  int main(int argc, char** argv) { return usp::run(argc, argv, run_chapter); }
int run(int argc, char** argv, int (*chapter)(Runtime& rt, int argc, char** argv));

// Writes line and a newline to stderr in a single write, so that another process's output on the
// same terminal (another rank's, or mpirun's MPI_ABORT banner) never cuts a message in two.
void say_line(const std::string& line);

}  // namespace usp
