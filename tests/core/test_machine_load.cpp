// report::machine_load: the line chapters 08 and 13 print next to their timings warns exactly
// when the load is above the cores.
#include <catch2/catch.hpp>

#include "common/report/machine_load.hpp"

using usp::report::describe;
using usp::report::MachineLoad;

TEST_CASE("machine load: a warning exactly when the load is above the cores", "[core]") {
  CHECK(describe(MachineLoad{1.5, 2}) == "load 1.50 (1 min) on 2 cores");
  CHECK(describe(MachineLoad{2.0, 2}).find("warning") == std::string::npos);
  const std::string busy = describe(MachineLoad{4.25, 2});
  CHECK(busy.rfind("load 4.25 (1 min) on 2 cores -- warning: the machine is busier than its cores", 0) == 0);
  CHECK(describe(MachineLoad{}) == "load unknown (getloadavg failed)");
  const MachineLoad now = usp::report::machine_load();
  CHECK(now.cores >= 1);
  CHECK(now.load1 >= 0);
}
