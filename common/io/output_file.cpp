#include "common/io/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"

namespace usp {
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

// Writes all of content to fd; false (errno set) on the first failed or short write.
bool write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view content) {
  if (path.empty()) throw Error("cannot write a file with an empty name");
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw Error("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  }
  // Same directory as the target, so that the rename never crosses file systems; the pid keeps
  // ranks writing into one directory from sharing a temporary name.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot create '" + tmp + "': " + errno_text());
  const bool written = write_all(fd, content);
  const std::string write_error = written ? "" : errno_text();
  const bool closed = ::close(fd) == 0;
  if (!written || !closed) {
    const std::string why = !written ? write_error : errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot write '" + path + "': " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot rename '" + tmp + "' to '" + path + "': " + why);
  }
}

void require_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw UsageError(flag + " must name a directory, got an empty string");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(flag + " '" + dir + "' cannot be created: " + ec.message());
  if (!fs::is_directory(dir, ec)) throw UsageError(flag + " '" + dir + "' is not a directory");
  const std::string probe = (fs::path(dir) / (".usp_write_probe." + std::to_string(::getpid()))).string();
  try {
    write_file_atomic(probe, "probe\n");
  } catch (const Error& e) {
    throw UsageError(flag + " '" + dir + "' is not writable (" + e.what() + ")");
  }
  ::unlink(probe.c_str());
}

}  // namespace usp
