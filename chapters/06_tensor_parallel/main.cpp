// ch06_tensor_parallel (work in progress)
#include "common/runtime.hpp"
int main(int argc, char** argv) {
  return usp::run(argc, argv, [&](usp::Runtime&) { return 0; });
}
