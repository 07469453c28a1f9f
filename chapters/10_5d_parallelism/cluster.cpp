#include "chapters/10_5d_parallelism/cluster.hpp"

#include "common/error.hpp"
#include "common/io/json_value.hpp"

namespace usp::plan {

Cluster Cluster::playbook() {
  Cluster c;
  const double GB = 1e9;
  for (double v : {435.97, 361.75, 160.14, 99.56, 84.74, 64.93, 32.94}) c.all_reduce.push_back(v * GB);
  for (double v : {249.85, 184.61, 118.97, 69.00, 54.97, 27.97, 11.04}) c.all_gather.push_back(v * GB);
  for (double v : {249.73, 181.55, 115.76, 68.55, 54.52, 27.94, 11.07}) c.reduce_scatter.push_back(v * GB);
  return c;
}

Cluster Cluster::from_file(const std::string& path) {
  const JsonValue j = read_json_file(path, "cluster file");
  auto fail = [&](const std::string& what) { throw UsageError("--cluster " + path + ": " + what); };
  Cluster c;
  try {
  c.name = j.contains("name") ? json_string(j.at("name")) : path;
  c.gpus_per_node = static_cast<int>(json_int64(j.at("gpus_per_node")));
  c.peak_flops = json_double(j.at("peak_tflops")) * 1e12;
  c.memory_bytes = json_double(j.at("memory_gb")) * 1e9;
  if (j.contains("tp_within_node")) c.tp_within_node = j.at("tp_within_node").get<bool>();
  const JsonValue& bw = j.at("bus_bandwidth_gbps");
  c.nodes.clear();
  for (std::size_t i = 0; i < bw.at("nodes").size(); ++i) c.nodes.push_back(static_cast<int>(json_int64(bw.at("nodes")[i])));
  for (auto [key, table] : {std::pair{"all_reduce", &c.all_reduce}, std::pair{"all_gather", &c.all_gather},
                            std::pair{"reduce_scatter", &c.reduce_scatter}}) {
    const JsonValue& row = bw.at(key);
    if (row.size() != c.nodes.size()) fail(std::string("bus_bandwidth_gbps.") + key + " needs one value per node count");
    for (std::size_t i = 0; i < row.size(); ++i) table->push_back(json_double(row[i]) * 1e9);
  }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("a key is missing or of the wrong type (") + e.what() + ")");
  }
  if (c.gpus_per_node < 1 || !(c.peak_flops > 0) || !(c.memory_bytes > 0) || c.nodes.empty() || c.nodes.front() != 1)
    fail("gpus_per_node, peak_tflops and memory_gb must be positive, and the bandwidth table must start at 1 node");
  return c;
}

double Cluster::bus(const std::vector<double>& table, int spanned) const {
  std::size_t i = 0;
  while (i + 1 < nodes.size() && nodes[i + 1] <= spanned) ++i;
  return table[i];
}

}  // namespace usp::plan
