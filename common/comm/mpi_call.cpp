#include "common/comm/mpi_call.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "common/error.hpp"

namespace usp::mpi {
namespace {

std::mutex& global_mutex() {
  static std::mutex m;
  return m;
}

std::atomic<std::int64_t> g_max_count{INT_MAX};

bool decide_serialized() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  const char* env = std::getenv("USP_MPI_SERIALIZE");
  const bool forced = env != nullptr && std::strcmp(env, "1") == 0;
  if (provided < MPI_THREAD_SERIALIZED)
    std::cerr << "usp: warning: the MPI library grants thread level " << provided
              << " (below MPI_THREAD_SERIALIZED); communicators still call MPI from their progress "
                 "threads, one call at a time\n";
  return forced || provided < MPI_THREAD_MULTIPLE;
}

}  // namespace

std::string error_string(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(len));
}

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw Error(std::string(call) + " failed: " + error_string(rc));
}

bool serialized() {
  static const bool value = decide_serialized();
  return value;
}

Lock::Lock() {
  if (serialized()) lock_ = std::unique_lock<std::mutex>(global_mutex());
}

std::int64_t max_count() { return g_max_count.load(std::memory_order_relaxed); }

void set_max_count(std::int64_t n) {
  g_max_count.store(std::clamp<std::int64_t>(n, 1, INT_MAX), std::memory_order_relaxed);
}

}  // namespace usp::mpi
