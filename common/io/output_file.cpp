#include "common/io/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <utility>

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

void ignore_file_size_signal() {
  static const bool xfsz_ignored = std::signal(SIGXFSZ, SIG_IGN) != SIG_ERR;
  (void)xfsz_ignored;
}

int finish_stdout(int code) {
  errno = 0;
  std::cout.flush();
  const bool failed = !std::cout.good() || std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return code;
  int why = errno;
  std::cout.clear();
  std::clearerr(stdout);
  // The failed write may lie further back (a flush inside the program), its errno since
  // overwritten: one more byte asks the destination again why it refuses.
  if (why == 0 && ::write(STDOUT_FILENO, "\n", 1) < 0) why = errno;
  std::cerr << "fatal: cannot write the standard output: " << (why != 0 ? std::strerror(why) : "write error") << std::endl;
  return 1;
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // A write past the file size limit (ulimit -f) must fail with EFBIG, which we report, rather
  // than kill the process with SIGXFSZ, which leaves no message and a missing result.
  ignore_file_size_signal();
  if (path_.empty()) throw Error("cannot write a file with an empty name");
  const std::string given = path_;  // for messages: the name the caller used
  std::error_code ec;
  // A symbolic link is written through: the file it names is replaced, not the link.
  if (fs::is_symlink(path_, ec)) {
    const fs::path resolved = fs::weakly_canonical(path_, ec);
    if (ec) throw Error("cannot write '" + path_ + "': cannot resolve the link: " + ec.message());
    path_ = resolved.string();
  }
  // Only a regular file is replaced: renaming over a device (/dev/full), a directory or a pipe
  // would destroy it, and writing into one would not keep the result.
  const fs::file_status st = fs::status(path_, ec);
  if (fs::exists(st) && !fs::is_regular_file(st))
    throw Error("cannot write '" + given + "': " + (given != path_ ? "it links to '" + path_ + "', which" : std::string("it")) +
                " is not a regular file");
  const fs::path target(path_);
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw Error("cannot create directory '" + target.parent_path().string() + "': " + ec.message());
  }
  // Same directory as the target, so that the rename never crosses file systems; the pid keeps
  // ranks writing into one directory from sharing a temporary name.
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create '" + tmp_ + "': " + errno_text());
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::write(std::string_view bytes) {
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': the file is already closed");
  if (!write_all(fd_, bytes)) {
    const std::string why = errno_text();
    discard();
    throw Error("cannot write '" + path_ + "': " + why);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("cannot write '" + path_ + "': the file is already closed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const std::string why = errno_text();
    discard();
    throw Error("cannot write '" + path_ + "': " + why);
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = errno_text();
    const std::string tmp = tmp_;
    discard();
    throw Error("cannot rename '" + tmp + "' to '" + path_ + "': " + why);
  }
  tmp_.clear();  // renamed: nothing left to remove
}

void write_file_atomic(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  file.write(content);
  file.commit();
}

void require_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw UsageError(flag + " must name a directory, got an empty string");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw UsageError(flag + " '" + dir + "' is not a directory");
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
