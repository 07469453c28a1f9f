#include "common/comm/mpi_progress.hpp"

#include <chrono>
#include <iostream>
#include <utility>

#include "common/error.hpp"
#include "common/trace.hpp"
#include "common/comm/mpi_call.hpp"

namespace usp::mpi {
namespace {

// Polling with requests pending: the thread keeps calling into MPI (yielding the core between
// polls) until they complete. It never naps: over shared memory a large message moves in
// fragments that advance only while both sides call into MPI, so a nap between polls stalls
// the transfer itself (measured: a 16 MiB send took 3-5x longer with 200 us naps). Yielding
// lets an oversubscribed rank's compute run, as MPI's own blocking waits do.
// kYieldPolls bounds the spinning of the serialised fallback's collectives (collective()).
constexpr int kYieldPolls = 200;

}  // namespace

// ---- OpWork -------------------------------------------------------------------------------

OpWork::~OpWork() {
  if (error_ && !observed_) {
    try {
      std::rethrow_exception(error_);
    } catch (const std::exception& e) {
      std::cerr << "usp: " << what_ << " failed and was never waited on: " << e.what() << std::endl;
    } catch (...) {
      std::cerr << "usp: " << what_ << " failed and was never waited on" << std::endl;
    }
  }
}

void OpWork::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  observed_ = true;
  if (error_) std::rethrow_exception(error_);
}

bool OpWork::test() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!done_) return false;
  observed_ = true;
  if (error_) std::rethrow_exception(error_);
  return true;
}

void OpWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

// ---- ProgressThread -----------------------------------------------------------------------

ProgressThread::ProgressThread() : thread_([this] { loop(); }) {}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

WorkHandle ProgressThread::submit(watchdog::Subject subject, Task task, std::string span) {
  auto work = std::make_shared<OpWork>(subject.op + " on communicator " + subject.comm);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back({std::move(task), work, std::move(subject), std::move(span)});
  }
  cv_.notify_all();
  return work;
}

void ProgressThread::loop() {
  for (;;) {
    Queued next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (requests_.empty()) cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (!queue_.empty()) {
        next = std::move(queue_.front());
        queue_.pop_front();
      } else if (stop_ && requests_.empty()) {
        return;
      }
    }
    if (next.work) run(next);
    if (!requests_.empty()) {
      bool progressed;
      {
        Lock lock;
        progressed = poll();
      }
      if (!progressed) std::this_thread::yield();
    }
  }
}

void ProgressThread::run(Queued& q) {
  current_ = std::make_shared<Group>();
  current_->work = q.work;
  current_->watch.emplace(std::move(q.subject));
  if (!q.span.empty() && Tracer::instance().enabled()) {
    current_->span = std::move(q.span);
    current_->start_us = Tracer::instance().now_us();
  }
  try {
    q.task(*this);
  } catch (...) {
    q.work->finish(std::current_exception());
  }
  current_->task_returned = true;
  // Drop what the task captured (its tensors) before a waiter can return, so that memory the
  // caller frees after wait() is really freed then; with requests still in flight the captures
  // keep the buffers alive until they complete.
  if (current_->outstanding == 0) q.task = nullptr;
  settle(*current_);
  current_.reset();
}

void ProgressThread::settle(Group& g) {
  if (!g.task_returned || g.outstanding != 0) return;
  g.watch.reset();  // over: nothing is waited for any more
  if (g.start_us >= 0) {  // recorded before finish(), so a waiter finds the span in the trace
    Tracer& tracer = Tracer::instance();
    tracer.add(g.span, "comm", g.start_us, tracer.now_us());
    g.start_us = -1;
  }
  g.work->finish();
}

void ProgressThread::attach(MPI_Request request, MPI_Datatype type, std::int64_t expected, const char* call,
                            std::shared_ptr<const void> buffer) {
  if (!current_) throw Error("ProgressThread::attach outside a task");
  requests_.push_back(request);
  pending_.push_back({current_, type, expected, call, std::move(buffer)});
  current_->outstanding += 1;
}

void ProgressThread::collective(const char* call, const std::function<int(MPI_Request*)>& start) {
  if (!serialized()) {
    check(start(nullptr), call);
    return;
  }
  // Serialised MPI: start the non-blocking form, then test it (and the pending point-to-point
  // requests) with the lock taken only for each test, so that other communicators' threads get
  // their turn while this collective waits for remote ranks.
  MPI_Request request = MPI_REQUEST_NULL;
  {
    Lock lock;
    check(start(&request), call);
  }
  for (int polls = 0;; ++polls) {
    int done = 0;
    {
      Lock lock;
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
      if (!requests_.empty()) poll();
    }
    if (done) return;
    if (polls < kYieldPolls) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
}

bool ProgressThread::poll() {
  const int n = static_cast<int>(requests_.size());
  if (n == 0) return false;
  indices_.resize(requests_.size());
  statuses_.resize(requests_.size());
  int outcount = 0;
  const int rc = MPI_Testsome(n, requests_.data(), &outcount, indices_.data(), statuses_.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
    // Nothing is known about individual requests: fail every op waiting on one.
    auto error = std::make_exception_ptr(Error(std::string("MPI_Testsome failed: ") + error_string(rc)));
    for (auto& p : pending_) p.group->work->finish(error);
    requests_.clear();
    pending_.clear();
    return true;
  }
  if (outcount == MPI_UNDEFINED || outcount == 0) return false;

  for (int k = 0; k < outcount; ++k) {
    Pending& p = pending_[static_cast<std::size_t>(indices_[k])];
    const MPI_Status& status = statuses_[static_cast<std::size_t>(k)];
    // status.MPI_ERROR is only meaningful when MPI_Testsome reported MPI_ERR_IN_STATUS.
    const int code = rc == MPI_ERR_IN_STATUS ? status.MPI_ERROR : MPI_SUCCESS;
    if (code != MPI_SUCCESS) {
      p.group->work->finish(std::make_exception_ptr(Error(std::string(p.call) + " failed: " + error_string(code))));
    } else if (p.expected >= 0) {
      int got = 0;
      MPI_Get_count(&status, p.type, &got);
      if (got != p.expected)
        p.group->work->finish(std::make_exception_ptr(
            Error(std::string(p.call) + ": expected " + std::to_string(p.expected) + " elements from rank " +
                  std::to_string(status.MPI_SOURCE) + ", but the matching send carried " + std::to_string(got))));
    }
    p.group->outstanding -= 1;
    settle(*p.group);
  }
  // MPI_Testsome set the completed requests to MPI_REQUEST_NULL: drop them.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    if (requests_[i] == MPI_REQUEST_NULL) continue;
    requests_[kept] = requests_[i];
    pending_[kept] = std::move(pending_[i]);
    ++kept;
  }
  requests_.resize(kept);
  pending_.resize(kept);
  return true;
}

}  // namespace usp::mpi
