// Flags that are accepted must act: the shared training flags refuse a device or backend the
// training chapters cannot use, and the global batch / grad-acc pair resolves one way for all.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/device.hpp"
#include "common/error.hpp"
#include "common/train/training_flags.hpp"

using namespace usp;

namespace {

// A training chapter's command line: the common flags, the training flags, and the two batch
// flags chapters 04 and 05 declare.
Cli parsed(std::vector<const char*> args, const TrainingDefaults& defaults = {}) {
  Cli cli("prog", "a training chapter");
  cli.add_common("out/prog");
  add_training_flags(cli, defaults);
  cli.add_int("grad-acc", 1, "micro-batches per step", 1, 1024);
  cli.add_int("global-batch", 0, "samples per step", 0, 1 << 20);
  args.insert(args.begin(), "prog");
  cli.parse(static_cast<int>(args.size()), args.data());
  return cli;
}

}  // namespace

TEST_CASE("--device and --backend the training chapters cannot honour are errors", "[training_flags]") {
  CHECK_NOTHROW(training_config_from(parsed({})));
  CHECK_NOTHROW(training_config_from(parsed({"--device", "cpu", "--backend", "mpi"})));
  CHECK_THROWS_WITH(training_config_from(parsed({"--device", "banana"})),
                    Catch::Contains("--device must be auto, cpu, cuda, cuda:N or cpu:1 (the emulated device), got 'banana'"));
  // Without a GPU (or without CUDA in the build) cuda says so; with one, that this chapter
  // trains on CPU ranks only. Either way: an error, never a silent CPU run.
  for (const char* device : {"cuda", "cuda:7"}) {
    const std::string expected = !cuda_compiled()          ? "this build has no CUDA"
                                 : cuda_device_count() == 0 ? "no CUDA device is visible"
                                                            : "trains on CPU ranks only";
    CHECK_THROWS_WITH(training_config_from(parsed({"--device", device})), Catch::Contains(expected));
  }
  CHECK_THROWS_WITH(training_config_from(parsed({"--backend", "nccl"})),
                    Catch::Contains("--backend nccl serves CUDA tensors"));
  CHECK_THROWS_WITH(training_config_from(parsed({"--backend", "host-staged"})), Catch::Contains("use --backend mpi"));
  // The emulated device is a device too: a CPU-only chapter refuses it rather than ignore it.
  CHECK_THROWS_WITH(training_config_from(parsed({"--device", "cpu:1"})), Catch::Contains("trains on CPU ranks only"));
  CHECK_THROWS_WITH(training_config_from(parsed({"--device", "cpu:2"})), Catch::Contains("--device must be auto"));
}

TEST_CASE("the chapters that train on CPU or CUDA resolve --device; --backend stays auto", "[training_flags]") {
  const auto config = [](std::vector<const char*> args) {
    return training_config_from(parsed(std::move(args)), TrainingDevices::cpu_or_cuda);
  };
  CHECK(config({"--device", "cpu"}).device == Device::cpu());
  CHECK(config({}).device == (cuda_device_count() > 0 ? Device::cuda(0) : Device::cpu()));  // auto
  if (cuda_device_count() > 0) {
    CHECK(config({"--device", "cuda"}).device == Device::cuda(0));
  } else {
    CHECK_THROWS_WITH(config({"--device", "cuda"}),
                      Catch::Contains(cuda_compiled() ? "no CUDA device is visible" : "this build has no CUDA"));
  }
  CHECK_THROWS_WITH(config({"--device", "banana"}), Catch::Contains("--device must be auto, cpu, cuda, cuda:N or cpu:1"));
  CHECK_THROWS_WITH(config({"--backend", "nccl"}),
                    Catch::Contains("--backend nccl: this chapter runs one rank and no collective on tensors"));
}

TEST_CASE("the data-parallel chapters resolve --device and the --backend that serves it", "[training_flags]") {
  const auto config = [](std::vector<const char*> args) {
    return training_config_from(parsed(std::move(args)), TrainingDevices::cpu_or_cuda_ranks);
  };
  CHECK(config({"--device", "cpu"}).backend == CommBackend::automatic);
  CHECK(config({"--device", "cpu", "--backend", "mpi"}).backend == CommBackend::mpi);
  // The emulated device: host memory under another name, always talking host-staged.
  CHECK(config({"--device", "cpu:1"}).device == Device::emulated());
  CHECK(config({"--device", "cpu:1"}).device != Device::cpu());
  CHECK(Device::emulated().is_cpu());
  CHECK(Device::emulated().str() == "cpu:1");
  CHECK_THROWS_WITH(config({"--device", "cpu:1", "--backend", "mpi"}),
                    Catch::Contains("the emulated device (--device cpu:1) always talks host-staged"));
  CHECK_THROWS_WITH(config({"--device", "cpu", "--backend", "nccl"}),
                    Catch::Contains("--backend nccl serves CUDA tensors; with --device cpu use mpi or auto"));
  CHECK_THROWS_WITH(config({"--device", "cpu", "--backend", "host-staged"}),
                    Catch::Contains("--backend host-staged serves CUDA tensors"));
  if (cuda_device_count() > 0) {
    CHECK(config({"--device", "cuda", "--backend", "nccl"}).backend == CommBackend::nccl);
    CHECK(config({"--device", "cuda", "--backend", "host-staged"}).backend == CommBackend::host_staged);
    CHECK_THROWS_WITH(config({"--device", "cuda", "--backend", "mpi"}),
                      Catch::Contains("--backend mpi serves CPU tensors; with --device cuda:0 use nccl, host-staged"));
  } else {
    CHECK_THROWS_WITH(config({"--device", "cuda", "--backend", "nccl"}),
                      Catch::Contains(cuda_compiled() ? "no CUDA device is visible" : "this build has no CUDA"));
  }
}

TEST_CASE("--global-batch and --grad-acc resolve to one grad-acc or are refused", "[training_flags]") {
  // mbs 2 over dp 4: 8 samples per micro-batch step.
  CHECK(resolve_grad_acc(parsed({"--mbs", "2"}), 2, 4) == 1);
  CHECK(resolve_grad_acc(parsed({"--grad-acc", "3"}), 2, 4) == 3);
  CHECK(resolve_grad_acc(parsed({"--global-batch", "24"}), 2, 4) == 3);
  CHECK(resolve_grad_acc(parsed({"--global-batch", "24", "--grad-acc", "3"}), 2, 4) == 3);
  CHECK_THROWS_WITH(resolve_grad_acc(parsed({"--global-batch", "20"}), 2, 4),
                    Catch::Contains("--global-batch 20 is not a multiple of mbs × dp = 2 × 4 = 8"));
  // ch05 used 2 here silently (16 / 8), ignoring --grad-acc 3.
  CHECK_THROWS_WITH(resolve_grad_acc(parsed({"--global-batch", "16", "--grad-acc", "3"}), 2, 4),
                    Catch::Contains("does not equal mbs × grad-acc × dp = 2 × 3 × 4 = 24"));
}

TEST_CASE("a chapter can restrict --recompute to the modes it measures", "[training_flags]") {
  TrainingDefaults only_none;
  only_none.recompute_modes = {"none"};
  CHECK(training_config_from(parsed({"--recompute", "none"}, only_none)).recompute == Recompute::none);
  CHECK_THROWS_AS(parsed({"--recompute", "full"}, only_none), UsageError);
  CHECK(training_config_from(parsed({"--recompute", "full"})).recompute == Recompute::full);
}

TEST_CASE("a sequence longer than the model's positions is refused", "[training_flags]") {
  CHECK_THROWS_WITH(training_config_from(parsed({"--seq", "8192"})), Catch::Contains("exceeds the model's max_seq"));
}
