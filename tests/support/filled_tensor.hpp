// What a test reads from a tensor an exercise had to fill. A function that replaced its Tensor&
// argument (t = Tensor(), or a new tensor of another shape or dtype) would otherwise show up as
// "got 0 elements" or a wall of mismatches that name nothing; this names the tensor:
//
//   CHECK(tensor_problem(reduced, "exercise 05.1: reduced", {S}, DType::f32) == "");
//   -> "exercise 05.1: reduced is undefined (the exercise must leave it defined: [4] f32)"
//   -> "exercise 05.1: reduced is [3] bf16, expected [4] f32"
#pragma once
#include <string>

#include "common/tensor.hpp"

namespace usp::testing {

inline std::string tensor_problem(const Tensor& t, const std::string& name, const Shape& shape, DType dtype) {
  const std::string want = shape_str(shape) + " " + dtype_name(dtype);
  if (!t.defined()) return name + " is undefined (the exercise must leave it defined: " + want + ")";
  if (t.shape() != shape || t.dtype() != dtype)
    return name + " is " + shape_str(t.shape()) + " " + dtype_name(t.dtype()) + ", expected " + want;
  return "";
}

}  // namespace usp::testing
