#include "common/tool_main.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>

#include "common/cli.hpp"
#include "common/error.hpp"
#include "common/io/output_file.hpp"

namespace usp {

namespace {

// Under mpirun -np N a tool would run N times over, each copy printing the same result (or the
// same error). The launcher's environment says so: Open MPI's OMPI_COMM_WORLD_SIZE/RANK, MPICH's
// (Hydra's) PMI_SIZE/PMI_RANK. Returns the copies (1 when not launched so) and this one's rank.
int launched_copies(int& rank) {
  for (const auto& [size_var, rank_var] : {std::pair{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
                                           std::pair{"PMI_SIZE", "PMI_RANK"}}) {
    const char* size = std::getenv(size_var);
    const char* r = std::getenv(rank_var);
    if (size == nullptr) continue;
    rank = r != nullptr ? std::atoi(r) : 0;
    return std::max(1, std::atoi(size));
  }
  rank = 0;
  return 1;
}

}  // namespace

int run_tool(int argc, char** argv, int (*body)(int, char**)) {
  ignore_file_size_signal();
  int rank = 0;
  const int copies = launched_copies(rank);
  if (copies > 1) {
    // Said once, by the first copy; every copy fails alike.
    if (rank == 0) {
      const std::string program = std::filesystem::path(argc > 0 ? argv[0] : "this tool").filename().string();
      std::cerr << "error: " << program << " is one process: launch it without mpirun (" << copies
                << " copies would each do the same work and print it)\n";
    }
    return 2;
  }
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
