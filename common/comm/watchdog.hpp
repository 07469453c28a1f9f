// The communication watchdog: a rank never waits forever for another.
//
// A rank that waits on others can wait forever: a peer deadlocked in a different op, a peer that
// threw and left, a peer stopped (SIGSTOP) or stuck in a loop. So every wait on other ranks holds
// a Watch for as long as it lasts: the MPI backend's ops from when its progress thread starts
// them until they complete (whether or not anyone is inside wait()), the NCCL backend's wait(),
// and the Runtime's MPI start-up and shut-down. One monitor thread per process ends the job when
// a Watch has lasted longer than the timeout: it prints
//   [rank 2] fatal: all_reduce on communicator mpi[0-3] waited 60.0 s for one of ranks [0,1,3]
//   (watchdog, USP_COMM_TIMEOUT=60)
// (one line) and calls MPI_Abort, on which mpirun ends every rank of the job; Open MPI kills a
// stopped rank too. For a collective nothing tells which member is late, so the message names
// the communicator's other ranks, "one of"; a send or receive names its peer. Ranks are world
// ranks, as in the "[rank r]" prefix. Time this process itself did not run (stopped by SIGSTOP or
// a debugger) is not counted as waiting: a stopped rank woken as the job ends blames no one.
//
// The timeout is USP_COMM_TIMEOUT, in seconds: 300 unless set, which is generous for real runs
// (ranks may legitimately compute apart for a while, e.g. rank 0 writing a checkpoint); 0 turns
// the watchdog off (a debugger holding a rank). The test executables default to 60 s.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace usp::watchdog {

inline constexpr double kDefaultTimeoutS = 300;
inline constexpr double kMaxTimeoutS = 1e6;  // ~11 days; a bigger value is surely a typo

// A USP_COMM_TIMEOUT value: seconds in [0, kMaxTimeoutS], 0 meaning off. Throws UsageError
// naming the variable for anything else ("", "5s", "-1", "inf").
double parse_timeout(const std::string& text);
// The timeout in force (seconds; 0: off). The Runtime sets it from USP_COMM_TIMEOUT.
double timeout();
void set_timeout(double seconds);

// What a wait waits for, as its fatal message tells it.
struct Subject {
  std::string op;           // "all_reduce", "recv (tag 3)", "MPI_Finalize"
  std::string comm;         // the communicator's label ("mpi[0-3]"); empty: none
  int rank = 0;             // this process's world rank
  std::vector<int> peers;   // the world ranks it waits for
  bool collective = false;  // any one of peers may be the late one
};

// World ranks, ascending runs of three or more shortened: {0,1,2,3,6,7} -> "0-3,6,7".
std::string rank_list(const std::vector<int>& ranks);
// "[rank r] fatal: <op> on communicator <comm> waited <t> s for one of ranks [..] (watchdog,
// USP_COMM_TIMEOUT=<timeout>)"; "for rank p" for a single peer.
std::string fatal_message(const Subject& subject, double waited_s, double timeout_s);

// One wait, watched from construction (or from `since`, when it began earlier) to destruction.
class Watch {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Watch(Subject subject) : Watch(std::move(subject), Clock::now()) {}
  Watch(Subject subject, Clock::time_point since);
  ~Watch();
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  std::uint64_t id_;
};

// For tests on one rank: what happens when a Watch expires, instead of printing and aborting the
// job. Each expired Watch is reported once. An empty handler restores the default.
void set_expiry_handler_for_testing(std::function<void(const std::string& message)> handler);

}  // namespace usp::watchdog
