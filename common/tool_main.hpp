// The main of a tool that runs as one process without MPI (usp_calc, usp_plan, usp_sample,
// bench_train_throughput): the failure rule of runtime.hpp for a single process, and its standard
// output checked like a result file.
//   int main(int argc, char** argv) { return usp::run_tool(argc, argv, calc_main); }
#pragma once

namespace usp {

class Cli;

// Launched as several processes (mpirun -np N, N > 1): "error: <tool> is one process: ..." from
// the first, exit 2 from every one, nothing run. Otherwise
// ignores SIGXFSZ, runs body; a UsageError prints "error: <message>" and returns 2, any other
// exception "fatal: <message>" and returns 1; then finish_stdout (common/io/output_file.hpp):
// output that could not be written is exit 1 with a message, never exit 0.
int run_tool(int argc, char** argv, int (*body)(int, char**));

// Parses the flags (UsageError on the first problem); with --help prints the help on standard
// output and returns false: the tool then returns 0 without doing anything.
//   if (!parse_tool_flags(cli, argc, argv)) return 0;
bool parse_tool_flags(Cli& cli, int argc, char** argv);

}  // namespace usp
