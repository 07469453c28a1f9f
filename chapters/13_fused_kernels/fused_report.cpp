#include "chapters/13_fused_kernels/fused_report.hpp"

namespace usp::ch13 {

report::Table equivalence_table(const std::vector<VariantDifference>& rows) {
  report::Table t({{.key = "chain", .format = "%-28s"},
                   {.key = "variant", .format = " %-9s"},
                   {.key = "largest_abs_difference", .format = " %.2e"}},
                  "   ");
  for (const VariantDifference& d : rows) t.add({d.chain, d.variant, d.largest_abs_difference});
  return t;
}

report::Table bandwidth_table(const std::vector<VariantTiming>& rows, double copy_gb_per_s) {
  constexpr double kMiB = 1.0 / 1048576;
  report::Table t({{.key = "chain_id", .json = false},
                   {.key = "chain", .csv = false},  // summary.json names a chain by its id
                   {.key = "chain", .header = "chain", .format = "%-28s", .json = false},
                   {.key = "variant", .header = "variant", .format = " %-9s"},
                   {.key = "passes", .header = "passes", .format = " %6d"},
                   {.key = "bytes", .header = "moved MiB", .format = " %10.1f", .scale = kMiB},
                   {.key = "scratch_bytes", .header = "scratch MiB", .format = " %11.1f", .scale = kMiB},
                   {.key = "ms", .header = "ms", .format = " %9.3f"},
                   {.key = "gb_per_s", .header = "GB/s", .format = " %8.2f"},
                   {.key = "copy_share", .header = "% copy", .format = " %6.0f%%", .csv = false, .json = false},
                   {.key = "speed_up", .header = "speed-up", .format = " %7.2fx", .csv = false, .json = false},
                   {.key = "copy_gb_per_s", .json = false}},
                  "   ");
  for (const VariantTiming& v : rows) {
    double unfused_ms = v.ms;
    for (const VariantTiming& u : rows)
      if (u.chain_id == v.chain_id && u.variant == "unfused") unfused_ms = u.ms;
    t.add({v.chain_id, v.chain_id, v.chain, v.variant, std::int64_t{v.passes}, v.bytes, v.scratch_bytes, v.ms,
           v.gb_per_s, 100.0 * v.gb_per_s / copy_gb_per_s, unfused_ms / v.ms, copy_gb_per_s});
  }
  return t;
}

}  // namespace usp::ch13
