#include "chapters/10_5d_parallelism/cluster.hpp"

#include "common/error.hpp"
#include "common/io/json_value.hpp"
#include "common/number_text.hpp"

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
  // Every number in a range that makes sense for a GPU cluster, checked as read (never a cast
  // that truncates 2^32 + 8 GPUs to 8, never a negative bandwidth or an infinite memory).
  auto count = [&](const JsonValue& v, const std::string& key, std::int64_t max) {
    const std::int64_t n = json_int64(v);
    if (n < 1 || n > max)
      fail(key + " must be between 1 and " + std::to_string(max) + ", got " + std::to_string(n));
    return static_cast<int>(n);
  };
  auto positive = [&](const JsonValue& v, const std::string& key, double max) {
    const double x = json_double(v);
    if (!(x > 0 && x <= max)) fail(key + " must be > 0 and <= " + format_double(max) + ", got " + format_double(x));
    return x;
  };
  Cluster c;
  try {
    c.name = j.contains("name") ? json_string(j.at("name")) : path;
    c.gpus_per_node = count(j.at("gpus_per_node"), "gpus_per_node", kMaxGpusPerNode);
    c.peak_flops = positive(j.at("peak_tflops"), "peak_tflops", kMaxTflops) * 1e12;
    c.memory_bytes = positive(j.at("memory_gb"), "memory_gb", kMaxMemoryGb) * 1e9;
    c.hbm_bytes_per_second = j.contains("hbm_tbps") ? positive(j.at("hbm_tbps"), "hbm_tbps", kMaxHbmTbps) * 1e12 : 0.0;
    if (j.contains("tp_within_node")) c.tp_within_node = j.at("tp_within_node").get<bool>();
    const JsonValue& bw = j.at("bus_bandwidth_gbps");
    c.nodes.clear();
    for (std::size_t i = 0; i < bw.at("nodes").size(); ++i) {
      c.nodes.push_back(count(bw.at("nodes")[i], "bus_bandwidth_gbps.nodes[" + std::to_string(i) + "]", kMaxNodes));
      if (i > 0 && c.nodes[i] <= c.nodes[i - 1])
        fail("bus_bandwidth_gbps.nodes must be in ascending order (each node count once), got " +
             std::to_string(c.nodes[i - 1]) + " before " + std::to_string(c.nodes[i]) +
             ": a group's bandwidth is the entry of the largest count <= its nodes");
    }
    for (auto [key, table] : {std::pair{"all_reduce", &c.all_reduce}, std::pair{"all_gather", &c.all_gather},
                              std::pair{"reduce_scatter", &c.reduce_scatter}}) {
      const JsonValue& row = bw.at(key);
      const std::string name = std::string("bus_bandwidth_gbps.") + key;
      if (row.size() != c.nodes.size()) fail(name + " needs one value per node count");
      for (std::size_t i = 0; i < row.size(); ++i)
        table->push_back(positive(row[i], name + "[" + std::to_string(i) + "]", kMaxBandwidthGbps) * 1e9);
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("a key is missing or of the wrong type (") + e.what() + ")");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    if (what.rfind("--cluster ", 0) == 0) throw;
    fail(what);  // json_int64 / json_double: a fraction, a huge integer, a string
  }
  if (c.nodes.empty() || c.nodes.front() != 1) fail("the bandwidth table must start at 1 node");
  return c;
}

double Cluster::bus(const std::vector<double>& table, int spanned) const {
  std::size_t i = 0;
  while (i + 1 < nodes.size() && nodes[i + 1] <= spanned) ++i;
  return table[i];
}

}  // namespace usp::plan
