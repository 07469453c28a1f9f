#include "common/tool_main.hpp"

#include <exception>
#include <iostream>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"

namespace usp {

int run_tool(int argc, char** argv, int (*body)(int, char**)) {
  ignore_file_size_signal();
  int code = 0;
  try {
    code = body(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.what() << '\n';
    code = 2;
  } catch (const std::exception& e) {
    std::cerr << "fatal: " << e.what() << '\n';
    code = 1;
  }
  return finish_stdout(code);
}

bool parse_tool_flags(Cli& cli, int argc, char** argv) {
  cli.parse(argc, argv);
  if (!cli.help_requested()) return true;
  std::cout << cli.help();
  return false;
}

}  // namespace usp
