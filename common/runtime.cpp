#include "common/runtime.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/comm/backends.hpp"
#include "common/cuda_support.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"

#if defined(USP_HAVE_MPI)
#include <mpi.h>
#endif

namespace usp {

namespace {

#if defined(USP_HAVE_MPI)
// The job's nodes as the ranks found them, for a job on more than one node (empty on one):
//   "[usp] 4 ranks on 2 nodes (node-local ranks from MPI_COMM_TYPE_SHARED): ranks [0,1] local
//   [0,1]; ranks [2,3] local [0,1]"
// where[2r], where[2r+1]: world rank r's node (its lowest world rank) and its node-local rank.
std::string node_layout(const std::vector<int>& where) {
  const int size = static_cast<int>(where.size() / 2);
  std::vector<int> leaders;
  for (int r = 0; r < size; ++r)
    if (where[2 * r] == r) leaders.push_back(r);
  if (leaders.size() < 2) return "";
  std::ostringstream line;
  line << "[usp] " << size << " ranks on " << leaders.size()
       << " nodes (node-local ranks from MPI_COMM_TYPE_SHARED):";
  for (const int leader : leaders) {
    std::vector<int> ranks, locals;
    for (int r = 0; r < size; ++r)
      if (where[2 * r] == leader) {
        ranks.push_back(r);
        locals.push_back(where[2 * r + 1]);
      }
    line << (leader == leaders.front() ? " " : "; ") << "ranks [" << watchdog::rank_list(ranks) << "] local ["
         << watchdog::rank_list(locals) << "]";
  }
  return line.str();
}
#endif

}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  // The watchdog's timeout, before the first wait on other ranks. A bad value is reported
  // below, once every rank can take part in agreeing on it.
  std::string bad_timeout;
  if (const char* env = std::getenv("USP_COMM_TIMEOUT")) {
    try {
      watchdog::set_timeout(watchdog::parse_timeout(env));
    } catch (const UsageError& e) {
      bad_timeout = e.what();
    }
  }
#if defined(USP_HAVE_MPI)
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    // Communicators run their ops on progress threads, several at once: ask for full
    // thread support (the MPI backend falls back to one lock if the library gives less).
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    owns_mpi_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  {
    const watchdog::Watch watch(world_wait("MPI start-up"));  // collective calls on the world
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank_);
    MPI_Comm_size(node, &local_size_);
    int leader = rank_;  // a node is named by its lowest world rank
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
    MPI_Comm_free(&node);
    const int mine[2] = {leader, local_rank_};
    std::vector<int> where(2 * static_cast<std::size_t>(size_));
    MPI_Allgather(mine, 2, MPI_INT, where.data(), 2, MPI_INT, MPI_COMM_WORLD);
    if (rank_ == 0)
      if (const std::string layout = node_layout(where); !layout.empty()) say_line(layout);
    world_ = make_mpi_world();
  }
#else
  (void)argc;
  (void)argv;
  world_ = make_self_communicator(Device::cpu());
#endif
  control_ = world_->split(0, rank_);
  failure_ = world_->split(0, rank_);
  try {
    agree_on(*control_, [&] {
      if (!bad_timeout.empty()) throw UsageError(bad_timeout);
    });
  } catch (const CollectiveExit&) {
    shutdown();  // the destructor of a Runtime that throws from its constructor never runs
    throw;
  }
}

Runtime::~Runtime() { shutdown(); }

void Runtime::shutdown() {
  failure_.reset();
  control_.reset();
  world_.reset();
#if defined(USP_HAVE_MPI)
  if (owns_mpi_) {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) {
      // Open MPI's MPI_Finalize waits for every rank: a rank gone astray would hold this one.
      const watchdog::Watch watch(world_wait("MPI_Finalize"));
      MPI_Finalize();
    }
  }
#endif
}

watchdog::Subject Runtime::world_wait(const char* what) const {
  watchdog::Subject s{what, "", rank_, {}, true};
  for (int r = 0; r < size_; ++r)
    if (r != rank_) s.peers.push_back(r);
  return s;
}

bool Runtime::mpi() const {
#if defined(USP_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

bool Runtime::ranks_share_gpu(Device device) {
  // Compare the physical GPUs' UUIDs: CUDA_VISIBLE_DEVICES may show each rank "its" GPU as
  // device 0 (one GPU per rank, as Slurm does), or show every rank the same one.
  const auto uuid = cuda::device_uuid(device.index);
  Tensor mine = Tensor::empty({16}, DType::e4m3, MemCategory::CommBuffer);
  std::copy(uuid.begin(), uuid.end(), mine.data<std::uint8_t>());
  Tensor all = Tensor::empty({16 * size_}, DType::e4m3, MemCategory::CommBuffer);
  world_->all_gather(mine, all);
  // Any pair, not only pairs with this rank: a rank alone on its GPU must still choose what the
  // ranks sharing one choose, or the two kinds would wait in different backends.
  const std::uint8_t* bytes = all.data<std::uint8_t>();
  for (int r = 0; r < size_; ++r)
    for (int s = r + 1; s < size_; ++s)
      if (std::equal(bytes + 16 * r, bytes + 16 * (r + 1), bytes + 16 * s)) return true;
  return false;
}

std::unique_ptr<Communicator> Runtime::make_world(Device device, CommBackend backend) {
  if (device == Device::cpu()) {
    if (backend == CommBackend::nccl || backend == CommBackend::host_staged)
      throw UsageError("--backend nccl and host-staged serve CUDA tensors; with --device cpu use mpi or auto");
    return world_->split(0, rank_);
  }
  if (device.is_emulated()) {  // through host copies, as ranks sharing a GPU
    if (backend == CommBackend::nccl || backend == CommBackend::mpi)
      throw UsageError("--device " + device.str() + " (the emulated device) talks host-staged; use --backend auto");
#if defined(USP_HAVE_MPI)
    return make_host_staged(world_->split(0, rank_), device);
#else
    return make_self_communicator(device);  // no MPI: one rank
#endif
  }
  [[maybe_unused]] const bool own_gpu = !ranks_share_gpu(device);
  if (backend == CommBackend::automatic) {
#if defined(USP_HAVE_NCCL) && defined(USP_HAVE_MPI)
    backend = own_gpu ? CommBackend::nccl : CommBackend::host_staged;
#else
    backend = CommBackend::host_staged;
#endif
  }
  switch (backend) {
    case CommBackend::nccl:
#if defined(USP_HAVE_NCCL) && defined(USP_HAVE_MPI)
      if (!own_gpu)
        throw UsageError("--backend nccl needs one GPU per rank, but ranks of this job share a "
                         "GPU (use --backend host-staged, or fewer ranks per node)");
      return make_nccl(*world_, device);
#else
      throw UsageError("--backend nccl: this build has no NCCL (use --backend host-staged)");
#endif
    case CommBackend::host_staged:
#if defined(USP_HAVE_CUDA) && defined(USP_HAVE_MPI)
      return make_host_staged(world_->split(0, rank_), device);
#else
      if (size_ == 1) return make_self_communicator(device);
      throw UsageError("--backend host-staged needs both CUDA and MPI in this build");
#endif
    case CommBackend::mpi:
      throw UsageError("--backend mpi serves CPU tensors; for --device cuda use nccl or host-staged");
    case CommBackend::automatic: break;
  }
  throw Error("make_world: unreachable");
}

std::unique_ptr<Communicator> Runtime::device_world(Device device, CommBackend backend) {
  std::unique_ptr<Communicator> comm;
  if (device != Device::cpu()) agree([&] { comm = make_world(device, backend); });
  return comm;
}

void Runtime::agree(const std::function<void()>& step) { agree_on(*world_, step); }

void Runtime::agree_on(Communicator& comm, const std::function<void()>& step) {
  std::string message;
  bool failed = false;
  try {
    step();
  } catch (const UsageError& e) {
    failed = true;
    message = e.what();
  }
  // Every rank learns the lowest failing rank; that one alone prints.
  Tensor first = Tensor::empty({1}, DType::i32);
  first.data<std::int32_t>()[0] = failed ? rank_ : size_;
  comm.all_reduce(first, ReduceOp::min);
  const int who = first.data<std::int32_t>()[0];
  if (who < size_) {
    if (who == rank_) say_line("error: " + message);
    throw CollectiveExit{2};
  }
}

// The agreement after the part goes over control_, a communicator no part ever uses. A rank
// whose part threw NotImplemented may have left the exercise halfway, while the others are still
// inside it, waiting for this rank in one of its collectives: had the agreement gone over the
// part's communicator, its all-gather could match their exercise collective and corrupt or hang
// both. Over control_ it simply waits, and so do they; then the thrower gives up after half the
// watchdog timeout, with the message that names it. The stuck ranks' watchdog fires a full
// timeout after they began waiting, which is about when the thrower left the part, so the
// thrower normally speaks first; should it not, their watchdog message still ends the job.
std::string Runtime::skip_if_not_implemented(const std::function<void()>& part) {
  std::string message;
  try {
    part();
  } catch (const NotImplemented& e) {
    message = e.what();
  }
  const bool threw = !message.empty();
  Tensor mine = Tensor::empty({1}, DType::i32);
  mine.data<std::int32_t>()[0] = threw ? 1 : 0;
  Tensor all = Tensor::empty({size_}, DType::i32);
  WorkHandle agreed = control_->all_gather_async(mine, all);
  const double limit = watchdog::timeout() / 2;
  if (threw && limit > 0) {
    const auto start = std::chrono::steady_clock::now();
    while (!agreed->test()) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit) {
        std::ostringstream line;
        line << "[rank " << rank_ << "] fatal: " << message << " -- this rank threw NotImplemented, but the "
             << "other ranks did not all finish the part within " << limit << " s (half of "
             << "USP_COMM_TIMEOUT): they are presumably inside it, waiting for this rank; an "
             << "exercise part must be implemented on every rank or on none";
        say_line(line.str());
        abort(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  agreed->wait();

  std::vector<int> throwers;
  for (int r = 0; r < size_; ++r)
    if (all.data<std::int32_t>()[r] != 0) throwers.push_back(r);
  if (throwers.empty()) return "";
  if (static_cast<int>(throwers.size()) == size_) return message;
  // The lowest rank that threw has the message; everyone knows, and stops together.
  if (rank_ == throwers.front()) {
    std::ostringstream line;
    line << "[rank " << rank_ << "] fatal: " << message << " -- NotImplemented on ";
    if (throwers.size() == 1) {
      line << "rank " << rank_;
    } else {
      line << "ranks [" << watchdog::rank_list(throwers) << "]";
    }
    line << " only, of " << size_ << " (the others finished the part); an exercise part must be "
         << "implemented on every rank or on none";
    say_line(line.str());
  }
  throw CollectiveExit{1};
}

int Runtime::fail_together(const std::string& line, int code) {
  if (size_ == 1) {
    say_line(line);
    return code;
  }
  // Every failing rank offers (1, a hash of its line); a rank that never comes is still working
  // or waiting for us, and the grace period runs out.
  const auto hash = static_cast<std::int32_t>(std::hash<std::string>{}(line) & 0x7fffffff);
  Tensor mine = Tensor::empty({2}, DType::i32);
  mine.data<std::int32_t>()[0] = 1;
  mine.data<std::int32_t>()[1] = hash;
  Tensor all = Tensor::empty({2 * size_}, DType::i32);
  WorkHandle agreed = failure_->all_gather_async(mine, all);
  const double timeout = watchdog::timeout();
  const double grace = timeout > 0 ? std::min(3.0, timeout / 2) : 3.0;
  const auto start = std::chrono::steady_clock::now();
  while (!agreed->test()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > grace) {
      say_line("[rank " + std::to_string(rank_) + "] " + line);
      abort(code);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  agreed->wait();
  bool alike = true;
  for (int r = 0; r < size_; ++r) alike = alike && all.data<std::int32_t>()[2 * r + 1] == hash;
  if (!alike)
    say_line("[rank " + std::to_string(rank_) + "] " + line);  // every rank failed, each its own way
  else if (rank_ == 0)
    say_line(line + " (on every rank)");
  return code;
}

bool Runtime::parse(Cli& cli, int argc, const char* const* argv) {
  agree([&] { cli.parse(argc, argv); });
  if (cli.help_requested()) {
    if (is_root()) std::cout << cli.help() << std::flush;
    return false;
  }
  // The results directory, and the checkpoint directory of --save when one is asked for, are
  // checked before any work: empty, an existing file, not creatable or not writable is a usage
  // error now, not a failure after minutes of training (found by every rank at the end). Rank 0
  // writes them.
  agree([&] {
    if (!is_root()) return;
    if (cli.declared("out")) require_output_dir(cli.get_string("out"));
    if (cli.declared("save") && !cli.get_string("save").empty()) require_output_dir(cli.get_string("save"), "--save");
  });
  return true;
}

void Runtime::require(bool cond, const std::string& message) {
  agree([&] {
    if (!cond) throw UsageError(message);
  });
}

void Runtime::abort(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(USP_HAVE_MPI)
  MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

void say_line(const std::string& line) {
  const std::string text = line + "\n";
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

int run(int argc, char** argv, const std::function<int(Runtime&)>& body) {
  ignore_file_size_signal();
  std::unique_ptr<Runtime> rt;
  try {
    rt = std::make_unique<Runtime>(argc, argv);
  } catch (const CollectiveExit& e) {
    return e.code;  // a bad environment, reported once
  } catch (const std::exception& e) {
    say_line(std::string("fatal: could not start: ") + e.what());
    return 1;
  }
  const int rank = rt->rank();
  try {
    return finish_stdout(body(*rt));
  } catch (const CollectiveExit& e) {
    return e.code;  // every rank agreed; the message is out
  } catch (const UsageError& e) {
    // Found outside an agreement point: by this rank alone (others may be waiting on us), or by
    // every rank alike (then said once).
    return rt->fail_together(std::string("error: ") + e.what(), 2);
  } catch (const std::exception& e) {
    if (rt->size() == 1) return rt->fail_together("[rank " + std::to_string(rank) + "] fatal: " + e.what(), 1);
    return rt->fail_together(std::string("fatal: ") + e.what(), 1);
  }
}

int run(int argc, char** argv, int (*chapter)(Runtime& rt, int argc, char** argv)) {
  return run(argc, argv, [&](Runtime& rt) { return chapter(rt, argc, argv); });
}

}  // namespace usp
