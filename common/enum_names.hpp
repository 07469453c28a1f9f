// The names of an enum's values, as one table per enum: what prints the value (summary.json,
// tables) and what parses it back (flags, config files) read the same table, so the two can
// never disagree.
//
//   inline constexpr EnumNames<Recompute, 3> kRecomputeNames{{{
//       {Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}}};
//   kRecomputeNames.name(Recompute::full)    -> "full"
//   kRecomputeNames.parse("some", "recompute") -> UsageError
//       "recompute must be one of none, selective, full, got 'some'"
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "common/error.hpp"

namespace usp {

template <class E, std::size_t N>
struct EnumNames {
  std::array<std::pair<E, const char*>, N> entries;

  // "?" for a value that is not in the table (a table missing a value is a bug).
  constexpr const char* name(E value) const {
    for (const auto& [e, n] : entries)
      if (e == value) return n;
    return "?";
  }

  // "a, b, c": the names in table order, for messages and help texts.
  std::string list() const {
    std::string out;
    for (const auto& entry : entries) out += (out.empty() ? "" : ", ") + std::string(entry.second);
    return out;
  }

  // The value named `text`; UsageError naming `what` and every accepted name otherwise.
  E parse(std::string_view text, const std::string& what) const {
    for (const auto& [e, n] : entries)
      if (text == n) return e;
    throw UsageError(what + " must be one of " + list() + ", got '" + std::string(text) + "'");
  }
};

}  // namespace usp
