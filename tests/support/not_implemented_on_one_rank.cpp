// An exercise part that throws NotImplemented on rank 1 only, for the failure tests of
// Runtime::skip_if_not_implemented (tests/CMakeLists.txt). The first argument says what the
// other ranks do in the part:
//   finished  nothing: they finish it and meet rank 1 at the agreement
//   stuck     a world all_reduce that waits for rank 1, which never comes
// Either way the job must end with a message naming rank 1, not skip the part or hang.
#include <string>

#include "common/error.hpp"
#include "common/runtime.hpp"

int main(int argc, char** argv) {
  const std::string others = argc > 1 ? argv[1] : "";
  return usp::run(argc, argv, [&](usp::Runtime& rt) {
    rt.require(rt.size() >= 2, "not_implemented_on_one_rank needs at least 2 ranks");
    rt.require(others == "finished" || others == "stuck", "usage: not_implemented_on_one_rank finished|stuck");
    const std::string skipped = rt.skip_if_not_implemented([&] {
      if (rt.rank() == 1) throw usp::NotImplemented("exercise 99.1: deliberately missing on rank 1");
      usp::Tensor t = usp::Tensor::from_floats({1.0f}, {1});
      if (others == "stuck") rt.world().all_reduce(t);
    });
    if (!skipped.empty()) throw usp::Error("the part was skipped although only rank 1 threw");
    return 0;
  });
}
