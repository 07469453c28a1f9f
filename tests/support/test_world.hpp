// What tests see of the job they run in: the world communicator of the Runtime that the test
// main created. Tests tagged [mpi] are run under mpirun with 1..5 ranks and must pass for any
// size; every rank runs every test case in the same order, so collectives inside them match.
#pragma once
#include "common/runtime.hpp"

namespace usp::testing {

Runtime& runtime();
inline Communicator& world() { return runtime().world(); }

}  // namespace usp::testing
