#include "common/comm/watchdog.hpp"

#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "common/error.hpp"

#if defined(USP_HAVE_MPI)
#include <mpi.h>
#endif

namespace usp::watchdog {
namespace {

using Clock = Watch::Clock;

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

// Prints the message and ends the job: MPI_Abort makes mpirun kill every rank.
[[noreturn]] void end_job(const std::string& message) {
  std::fputs((message + "\n").c_str(), stderr);
  std::fflush(nullptr);
#if defined(USP_HAVE_MPI)
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  std::_Exit(1);
}

// The registry of open Watches and the thread that looks at the oldest. It is never destroyed
// (the thread is detached and may still be waiting while the process exits).
//
// The thread sleeps until the oldest Watch's deadline, or for one tick (a second at most), whichever
// comes first. While nothing is watched it still wakes once per tick, so that a new Watch (whose
// deadline is a full timeout away) never needs to wake it: registering a wait stays a map insert
// under a lock, cheap enough for every op.
//
// Time this process did not run is not time spent waiting. A wake-up more than kFrozen after it
// was due means the whole process was held (SIGSTOP, a debugger, a starved machine): every open
// Watch is moved forward by that gap. Otherwise a rank stopped in the middle of a wait, and woken
// when the job is torn down, would report that it "waited" for the very rank that was waiting
// for it.
class Monitor {
 public:
  std::uint64_t add(Subject subject, Clock::time_point since) {
    std::lock_guard<std::mutex> lock(mu_);
    const std::uint64_t id = next_id_++;
    entries_.emplace(id, Entry{std::move(subject), since, false});
    if (!started_) {
      started_ = true;
      std::thread([this] { loop(); }).detach();
    } else if (timeout_s_ > 0 && deadline(since) < scheduled_) {
      cv_.notify_one();  // began before the monitor's next look (an NCCL wait on an older op)
    }
    return id;
  }

  void remove(std::uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.erase(id);
  }

  double timeout() {
    std::lock_guard<std::mutex> lock(mu_);
    return timeout_s_;
  }

  void set_timeout(double s) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      timeout_s_ = s;
    }
    cv_.notify_one();
  }

  void set_handler(std::function<void(const std::string&)> h) {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(h);
  }

 private:
  struct Entry {
    Subject subject;
    Clock::time_point since;
    bool reported;  // only with a test handler: the job goes on after a report
  };

  Clock::time_point deadline(Clock::time_point since) const {
    return since + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s_));
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (timeout_s_ <= 0) {  // off: sleep until the timeout is changed
        scheduled_ = Clock::time_point::max();
        cv_.wait(lock);
        continue;
      }
      Entry* oldest = nullptr;
      for (auto& [id, e] : entries_)
        if (!e.reported && (oldest == nullptr || e.since < oldest->since)) oldest = &e;
      const Clock::time_point now = Clock::now();
      if (oldest != nullptr && now >= deadline(oldest->since)) {
        const double waited = std::chrono::duration<double>(now - oldest->since).count();
        const std::string message = fatal_message(oldest->subject, waited, timeout_s_);
        if (!handler_) end_job(message);
        oldest->reported = true;
        auto handler = handler_;
        lock.unlock();
        handler(message);
        lock.lock();
        continue;
      }
      scheduled_ = std::min(oldest != nullptr ? deadline(oldest->since) : deadline(now), now + tick());
      cv_.wait_until(lock, scheduled_);
      const Clock::duration late = Clock::now() - scheduled_;
      if (late > kFrozen)
        for (auto& [id, e] : entries_) e.since += late;
    }
  }

  // A second, or a quarter of a shorter timeout: how much of a stop can go unnoticed.
  Clock::duration tick() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(1.0, timeout_s_ / 4)));
  }
  static constexpr Clock::duration kFrozen = std::chrono::seconds(1);

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::uint64_t, Entry> entries_;
  std::uint64_t next_id_ = 1;
  double timeout_s_ = kDefaultTimeoutS;
  std::function<void(const std::string&)> handler_;
  bool started_ = false;
  Clock::time_point scheduled_ = Clock::time_point::min();
};

Monitor& monitor() {
  static Monitor* m = new Monitor;  // leaked on purpose, see Monitor
  return *m;
}

}  // namespace

double parse_timeout(const std::string& text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(value) || value < 0)
    throw UsageError("USP_COMM_TIMEOUT='" + text + "' is not a number of seconds (e.g. 60; 0 turns the "
                     "communication watchdog off)");
  if (value > kMaxTimeoutS)
    throw UsageError("USP_COMM_TIMEOUT=" + text + " is more than " + seconds_text(kMaxTimeoutS) +
                     " seconds (0 turns the communication watchdog off)");
  return value;
}

double timeout() { return monitor().timeout(); }
void set_timeout(double seconds) { monitor().set_timeout(seconds); }

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;  // ranks[i..j] ascend by one
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    if (j >= i + 2) {
      out += std::to_string(ranks[i]) + "-" + std::to_string(ranks[j]);
      i = j + 1;
    } else {
      out += std::to_string(ranks[i]);
      i += 1;
    }
  }
  return out;
}

std::string fatal_message(const Subject& s, double waited_s, double timeout_s) {
  char waited[32];
  std::snprintf(waited, sizeof waited, "%.1f", waited_s);
  std::string m = "[rank " + std::to_string(s.rank) + "] fatal: " + s.op;
  if (!s.comm.empty()) m += " on communicator " + s.comm;
  m += " waited " + std::string(waited) + " s for ";
  if (s.peers.empty()) {
    m += "no other rank";
  } else if (s.peers.size() == 1) {
    m += "rank " + std::to_string(s.peers[0]);
  } else {
    m += std::string(s.collective ? "one of " : "") + "ranks [" + rank_list(s.peers) + "]";
  }
  return m + " (watchdog, USP_COMM_TIMEOUT=" + seconds_text(timeout_s) + ")";
}

Watch::Watch(Subject subject, Clock::time_point since) : id_(monitor().add(std::move(subject), since)) {}
Watch::~Watch() { monitor().remove(id_); }

void set_expiry_handler_for_testing(std::function<void(const std::string& message)> handler) {
  monitor().set_handler(std::move(handler));
}

}  // namespace usp::watchdog
