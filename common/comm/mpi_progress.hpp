// The progress thread of one MPI communicator, and the Work handles it completes.
//
// Every op of the communicator becomes a task queued here in issue order; the thread runs the
// tasks one after the other, so collectives reach MPI in the same order on every rank (as MPI
// requires) while the caller computes. Two kinds of task:
//   * collectives call MPI's blocking functions through collective(): the thread sits in
//     MPI_Allreduce while the caller works, which is the overlap async ops promise;
//   * point-to-point tasks only post MPI_Isend / MPI_Irecv and attach() the requests. A
//     blocking MPI_Send here could deadlock: two ranks sending to each other would each sit in
//     their send, and neither thread would reach the receive queued behind it. Pending requests
//     are tested (MPI_Testsome) between tasks and, while the queue is empty, in a polling loop
//     that yields first and then naps briefly, so an idle rank does not burn a core.
// A task's Work completes when the task has returned and every request it attached has
// completed; an exception thrown by the task, or an error status of a request, fails the Work and
// wait() rethrows it.
//
// While the thread sits in a blocking collective, MPI still progresses the pending requests
// underneath (that is MPI's job), but their Works are only marked complete once it returns.
//
// Watchdog: each task holds a watchdog::Watch (watchdog.hpp) from when the thread starts it until
// its Work completes, so an op that waits too long on other ranks ends the job even if nobody
// waits on its Work (a rank unwinding after an error, a communicator's destructor draining its
// queue). Ops queued behind a running one are not yet waiting on anyone, and are not watched.
//
// Tracing: a task submitted with a span name, started while Tracer::instance() is enabled, is
// recorded as a span on the "comm" stream, from when the thread starts the task to when its
// Work completes (just before wait() can return), so the trace shows when each op really ran.
#pragma once
#include <mpi.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/comm/communicator.hpp"
#include "common/comm/watchdog.hpp"

namespace usp::mpi {

// The completion of one op: finished once by the progress thread, waited on by the caller.
class OpWork final : public Work {
 public:
  explicit OpWork(std::string what) : what_(std::move(what)) {}
  ~OpWork() override;  // an error nobody waited for is printed rather than lost

  void wait() override;  // blocks until done; rethrows the op's error
  bool test() override;  // true once done; like wait(), throws if the op failed
  void finish(std::exception_ptr error = nullptr);  // the first call counts; later ones are ignored

 private:
  std::string what_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool observed_ = false;  // someone saw the outcome (wait, or test returning true)
  std::exception_ptr error_;
};

class ProgressThread {
 public:
  using Task = std::function<void(ProgressThread&)>;

  ProgressThread();
  // Runs the tasks still queued and waits for their requests, then joins the thread: ops
  // already issued involve other ranks, which would wait forever for the ones dropped here.
  ~ProgressThread();
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Queues task; subject names it in error and watchdog messages. A non-empty span names the
  // task's "comm" span in the trace (see above).
  WorkHandle submit(watchdog::Subject subject, Task task, std::string span = {});

  // ---- for tasks, on the progress thread ----------------------------------------------------
  // Attaches a posted request to the running task. expected: the count (in type's units) a
  // receive must deliver, checked against its status; -1 for sends. buffer is kept alive until
  // the request completes, even if the caller lets go of its tensor before waiting.
  void attach(MPI_Request request, MPI_Datatype type, std::int64_t expected, const char* call,
              std::shared_ptr<const void> buffer);
  // Runs one collective to completion: start(nullptr) must call the blocking MPI function, and
  // start(&request) its non-blocking twin (used when MPI calls are serialised, see mpi_call.hpp).
  void collective(const char* call, const std::function<int(MPI_Request*)>& start);

 private:
  struct Group {  // the running or finished task of one Work and its outstanding requests
    std::shared_ptr<OpWork> work;
    int outstanding = 0;
    bool task_returned = false;
    std::optional<watchdog::Watch> watch;  // from the start of the task until the Work completes
    std::string span;      // traced: the span's name, and when the task started
    double start_us = -1;  // < 0: not traced
  };
  struct Pending {
    std::shared_ptr<Group> group;
    MPI_Datatype type;
    std::int64_t expected;
    const char* call;
    std::shared_ptr<const void> buffer;
  };
  struct Queued {
    Task task;
    std::shared_ptr<OpWork> work;
    watchdog::Subject subject;
    std::string span;
  };

  void loop();
  void run(Queued& q);
  // Tests the pending requests once and completes what finished; true if anything did. The
  // caller holds the MPI lock.
  bool poll();
  void settle(Group& g);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  bool stop_ = false;

  // Touched by the progress thread only.
  std::vector<MPI_Request> requests_;
  std::vector<Pending> pending_;  // parallel to requests_
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  std::shared_ptr<Group> current_;

  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace usp::mpi
