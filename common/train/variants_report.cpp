#include "common/train/variants_report.hpp"

#include <algorithm>
#include <cstdio>

namespace usp {

report::Column padded_label_column(int width) {
  const auto w = static_cast<std::size_t>(width);
  return {.header = "", .format = "%s", .text = [w](const report::Value& v) {
            std::string s = std::get<std::string>(v);
            std::size_t chars = 0;
            for (unsigned char ch : s) chars += (ch & 0xC0) != 0x80;  // UTF-8: count the lead bytes
            return s + std::string(chars < w ? w - chars : 0, ' ');
          }, .header_width = width};
}

void print_losses_side_by_side(std::ostream& out, const std::vector<VariantLosses>& variants,
                               const report::Column& label, const std::string& reference,
                               const LossAgreement& agreement, const std::string& what) {
  std::vector<report::Column> c = {label};
  for (std::size_t step = 0; step < variants[0].losses.size(); ++step)
    c.push_back({.header = "loss " + std::to_string(step), .format = "  %-11.7f"});
  c.push_back({.header = "max|Δw| vs " + reference, .format = "  %.3g"});
  report::Table t(std::move(c));
  for (const VariantLosses& v : variants) {
    std::vector<report::Value> row;
    row.emplace_back(v.label);
    for (double loss : v.losses) row.emplace_back(loss);
    row.emplace_back(max_abs_diff(v.parameters, variants[0].parameters));
    t.add(std::move(row));
  }
  t.print(out);
  char line[200];
  std::snprintf(line, sizeof line,
                "  the losses agree across the %s: %s (largest relative difference %.2g; allowed %.2g)\n",
                what.c_str(), agreement.agree() ? "yes" : "NO", agreement.max_relative_difference, agreement.allowed);
  out << line;
}

void write_agreement_json(JsonWriter& j, const LossAgreement& agreement) {
  j.field("losses_agree", agreement.agree());
  j.field("max_relative_loss_difference", agreement.max_relative_difference);
}

void write_variants_array(JsonWriter& j, const std::vector<VariantLosses>& variants, const report::Table& numbers,
                          int world) {
  j.key("variants").begin_array();
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const VariantLosses& v = variants[i];
    j.begin_object();
    j.field("label", v.label).field("name", v.name);
    j.key("losses").array(v.losses);
    j.field("max_param_diff_vs_first", max_abs_diff(v.parameters, variants[0].parameters));
    j.key("rank0").begin_object();
    numbers.write_json_fields(j, i * static_cast<std::size_t>(world));
    j.end_object();
    j.end_object();
  }
  j.end_array();
}

}  // namespace usp
