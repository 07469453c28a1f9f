// A GPU cluster as the planner (planner.hpp) sees it: nodes of GPUs with a peak FLOP rate and a
// memory, and the bus bandwidth NCCL's collectives reach over a group spanning a number of nodes
// (inside one node: NVLink; across nodes: the network). The default is the cluster the
// Ultra-Scale Playbook measured (8 × H100 SXM per node, its NCCL measurements for 256 MB
// messages); a JSON file can describe another:
//   {"name": "...", "gpus_per_node": 8, "peak_tflops": 989.5, "memory_gb": 80, "hbm_tbps": 3.35,
//    "tp_within_node": true,
//    "bus_bandwidth_gbps": {"nodes": [1, 2, 4], "all_reduce": [...], "all_gather": [...],
//                           "reduce_scatter": [...]}}
// Bus bandwidth (NCCL's busbw): a ring all-reduce of S bytes over n ranks takes
// S · 2(n-1)/n / busbw; an all-gather or reduce-scatter of S (the whole) S · (n-1)/n / busbw.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace usp::plan {

struct Cluster {
  std::string name = "playbook H100 cluster";
  int gpus_per_node = 8;
  double peak_flops = 989.5e12;  // dense bf16, per GPU
  double memory_bytes = 80e9;
  // HBM bandwidth per GPU in bytes/s (the GEMM-memory term, step_terms.hpp); 0: not known, the
  // term left out (a cluster file without "hbm_tbps").
  double hbm_bytes_per_second = 3.35e12;
  bool tp_within_node = true;    // a tensor-parallel group may not span nodes
  // Bus bandwidth in bytes/s for a group spanning nodes[i] nodes (ascending; 1 = inside a node).
  std::vector<int> nodes = {1, 2, 4, 8, 16, 32, 64};
  std::vector<double> all_reduce, all_gather, reduce_scatter;

  // The playbook's cluster (its NCCL medians).
  static Cluster playbook();
  // The largest values a cluster file may give: far above any real cluster, small enough that
  // every product the planner forms stays finite and every count fits an int.
  static constexpr std::int64_t kMaxGpusPerNode = 1024;
  static constexpr std::int64_t kMaxNodes = 1 << 20;
  static constexpr double kMaxTflops = 1e6;          // per GPU
  static constexpr double kMaxMemoryGb = 1e6;        // per GPU
  static constexpr double kMaxBandwidthGbps = 1e6;   // bus bandwidth of a group
  static constexpr double kMaxHbmTbps = 1e3;         // per GPU
  // From a JSON file (UsageError naming the file and the problem): gpus_per_node and the node
  // counts integers in [1, their max], peak_tflops, memory_gb, hbm_tbps (optional) and every
  // bandwidth in (0, max],
  // the node counts strictly ascending from 1.
  static Cluster from_file(const std::string& path);

  // The bus bandwidth of a group spanning `spanned` nodes: the table's entry at the largest
  // count <= spanned (a group over more nodes than measured gets the last entry).
  double bus(const std::vector<double>& table, int spanned) const;
};

}  // namespace usp::plan
