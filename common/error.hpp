// Errors of the course: what went wrong, said once and clearly.
#pragma once
#include <stdexcept>
#include <string>

namespace usp {

// A fault in the program or the environment (CUDA, MPI, I/O ...).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user asked for something impossible: a bad flag, a rank count that does not factor,
// a missing file. Reported as "error: <message>" without a stack of noise.
class UsageError : public Error {
 public:
  using Error::Error;
};

// An exercise stub that the student has not filled in yet: "exercise NN.k: <what> (hint: ...)".
class NotImplemented : public Error {
 public:
  using Error::Error;
};

// USP_CHECK(cond, message-expression): throws usp::Error naming the failed condition.
#define USP_CHECK(cond, msg)                                                              \
  do {                                                                                   \
    if (!(cond)) throw ::usp::Error(std::string(msg) + " [" #cond " failed at " __FILE__ \
                                    ":" + std::to_string(__LINE__) + "]");              \
  } while (0)

}  // namespace usp
