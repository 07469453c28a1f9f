// Files a user names as input (a text, a checkpoint's files, a JSON file): checked before they
// are opened, so that a wrong path gets the message that says what is wrong with it, never a
// "not found" for a directory or a device.
#pragma once
#include <string>

namespace usp {

// Throws UsageError "<what> 'path' not found", "<what> 'path' is a directory" or "<what> 'path'
// is not a regular file (a device, FIFO or socket)" unless path names a regular file (after
// symbolic links).
void require_input_file(const std::string& path, const std::string& what);

}  // namespace usp
