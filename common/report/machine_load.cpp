#include "common/report/machine_load.hpp"

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace usp::report {

MachineLoad machine_load() {
  MachineLoad m;
  double avg[1];
  if (getloadavg(avg, 1) == 1) m.load1 = avg[0];
  m.cores = static_cast<int>(std::thread::hardware_concurrency());
  return m;
}

std::string describe(const MachineLoad& m) {
  if (m.load1 < 0) return "load unknown (getloadavg failed)";
  char line[256];
  std::snprintf(line, sizeof line, "load %.2f (1 min) on %d cores", m.load1, m.cores);
  std::string text = line;
  if (m.busy())
    text += " -- warning: the machine is busier than its cores, so these timings measure the sharing as much as "
            "the code; rerun on an idle machine before comparing them with a prediction";
  return text;
}

}  // namespace usp::report
