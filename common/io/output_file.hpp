// Output files: every result a program writes (summary.json, CSVs, traces, checkpoints) goes
// through here, so that nothing written is silently lost:
//   * a file appears under its name complete or not at all (written to a temporary file in the
//     same directory, flushed, closed, then renamed over the name);
//   * any failure (disk full, file size limit, no permission) throws usp::Error naming the path
//     (SIGXFSZ is ignored from the first output file on, so a size limit is an error, not a kill);
//   * an output directory is checked before the work starts (require_output_dir), so a run does
//     not compute for minutes and then find it cannot write.
#pragma once
#include <string>
#include <string_view>

namespace usp {

// Writes content to path atomically (temporary file + rename); creates missing parent
// directories. Throws usp::Error on any failure; the name then holds its previous content (or
// nothing), never a truncated file.
void write_file_atomic(const std::string& path, std::string_view content);

// The same rule for a file written in pieces (a safetensors file: header, then each tensor's
// bytes, without first gathering them into one string). Bytes go to a temporary file next to
// `path`; commit() closes it and renames it over the name. Destroyed without commit (an
// exception on the way), it removes the temporary file: the name is never left half-written.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates parent directories and the temporary file
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);  // throws usp::Error naming the path (disk full, size limit)
  void commit();                       // close + rename; throws usp::Error on failure

 private:
  void discard() noexcept;
  std::string path_, tmp_;
  int fd_ = -1;
};

// The --out directory rule: dir must not be empty; it is created (with its parents) if missing,
// and a probe file is written to and removed from it. Throws usp::UsageError naming the flag
// ("--out" unless `flag` says otherwise) when any of that fails.
void require_output_dir(const std::string& dir, const std::string& flag = "--out");

// Standard output is a result too (usp_calc, usp_plan and usp_eval print theirs there, a chapter
// its tables): usp::run and usp::run_tool (common/tool_main.hpp) apply both of these.
// ignore_file_size_signal: from now on a write past the file size limit (ulimit -f) fails with
// EFBIG, which is reported, instead of killing the process with SIGXFSZ and no message.
void ignore_file_size_signal();
// Flushes std::cout and C's stdout. Returns code when everything printed reached its destination;
// otherwise prints "fatal: cannot write the standard output: <why>" on stderr and returns 1
// (a full disk, /dev/full, a size limit: never exit 0 with the output lost).
int finish_stdout(int code);

}  // namespace usp
