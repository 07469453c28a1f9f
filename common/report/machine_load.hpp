// How busy the machine was while a chapter timed something. Deterministic numbers (bytes,
// counts, losses) do not depend on it; timings do: on a machine whose load is above its cores,
// every rank shares a core with someone, and a measured bubble or bandwidth says more about the
// neighbours than about the schedule or the kernel. Chapters that compare a measured time with
// a prediction (08's bubble, 13's share of the copy bandwidth) print this line next to it and
// record it in summary.json.
#pragma once
#include <string>

namespace usp::report {

struct MachineLoad {
  double load1 = -1;  // runnable processes, averaged over the last minute (getloadavg); -1 unknown
  int cores = 0;      // the cores this process may run on (std::thread::hardware_concurrency)
  bool busy() const { return load1 > cores; }
};

MachineLoad machine_load();

// "load 1.93 (1 min) on 2 cores", and when busy a warning that the timings are not the machine's.
std::string describe(const MachineLoad& m);

}  // namespace usp::report
