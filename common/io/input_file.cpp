#include "common/io/input_file.hpp"

#include <filesystem>

#include "common/error.hpp"

namespace usp {

void require_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  const std::string me = what + " '" + path + "'";
  if (!fs::exists(st)) throw UsageError(me + " not found");
  if (fs::is_directory(st)) throw UsageError(me + " is a directory");
  if (!fs::is_regular_file(st)) throw UsageError(me + " is not a regular file (a device, FIFO or socket)");
}

}  // namespace usp
