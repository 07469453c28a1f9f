// Cli: the command line of every executable, declared over CLI11. Flags are declared with their
// default, their help line and their limits; --help prints them all. A bad value gets one message
// naming the flag, what it expects and what it got (usp::UsageError), e.g.
//   error: --steps must be >= 1, got 0
//   error: unknown flag --stpes (see --help)
//   error: --eval-every: nothing trains here ... (a flag other executables take, refused with why)
//   error: --steps is given twice ('1', then '2'): give it once
//   error: --save needs a value, got an empty one
// Forms accepted: --name value, --name=value, and --flag for booleans. Integers accept the
// suffixes K, M, G (powers of 1024), so --max-bytes 64M works; a value beyond 64 bits is out of
// range like any other, never wrapped.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace usp {

class Cli {
 public:
  Cli(std::string program, std::string summary);

  Cli& add_int(const std::string& name, std::int64_t def, const std::string& help,
               std::int64_t min = std::numeric_limits<std::int64_t>::min(),
               std::int64_t max = std::numeric_limits<std::int64_t>::max());
  Cli& add_float(const std::string& name, double def, const std::string& help,
                 double min = -std::numeric_limits<double>::infinity(),
                 double max = std::numeric_limits<double>::infinity());
  Cli& add_string(const std::string& name, const std::string& def, const std::string& help);
  Cli& add_choice(const std::string& name, const std::string& def,
                  const std::vector<std::string>& choices, const std::string& help);
  Cli& add_flag(const std::string& name, const std::string& help);  // false unless given
  // A flag other executables of the course take and this one does not act on: given (with or
  // without a value), it is the UsageError "--name: why" instead of "unknown flag" (or, for a flag
  // this program declares, instead of a value it would silently ignore: it keeps its default);
  // --help does not list it.
  Cli& refuse(const std::string& name, const std::string& why);

  // The flags every executable shares: --seed, --device (auto|cpu|cuda[:N]),
  // --backend (auto|mpi|nccl|host-staged), --out DIR.
  Cli& add_common(const std::string& default_out);
  // Training executables add --steps too.
  Cli& add_steps(std::int64_t def);

  // Throws UsageError on the first problem. --help sets help_requested() and nothing else is
  // reported.
  void parse(int argc, const char* const* argv);
  bool help_requested() const { return help_; }
  std::string help() const;

  std::int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;  // strings and choices
  bool get_flag(const std::string& name) const;
  bool given(const std::string& name) const;  // set on the command line, not defaulted
  bool declared(const std::string& name) const;  // the program has this flag at all
  // The parsed values as one JSON object {"name": value, ...} in declaration order, for
  // summary.json: integers as integers, reals as numbers, switches as booleans, else strings.
  std::string values_json() const;

 private:
  enum class Kind { integer, real, text, choice, flag };
  struct Option {
    std::string name;
    Kind kind = Kind::text;
    std::string help;
    std::vector<std::string> choices;
    std::int64_t imin = 0, imax = 0;
    double min = 0, max = 0;
    std::int64_t integer = 0;  // the current value, in the member of its kind
    double real = 0;
    std::string text;
    bool flag = false;
    bool given = false;
    std::string given_text;  // as given, for the message when it is given again
    std::string refused;     // non-empty: refuse(name, why) on a declared flag
  };
  Option& declare(const std::string& name, Kind kind, const std::string& help);
  const Option& find(const std::string& name, Kind kind) const;
  static void set(Option& opt, const std::string& text);  // throws UsageError naming the flag

  std::string program_, summary_;
  std::vector<Option> options_;  // in declaration order
  std::vector<std::pair<std::string, std::string>> refused_;  // (name, why)
  bool help_ = false;
};

// Parses "123", "64K", "64M", "1G" (powers of 1024); throws UsageError naming `what`, also when
// the value does not fit in 64 bits.
std::int64_t parse_size(const std::string& text, const std::string& what);
// "a,b,,c" -> {"a", "b", "", "c"}: the items between commas, empty ones kept ("" -> {""}), so that
// a list flag can refuse them instead of skipping them.
std::vector<std::string> split_list(const std::string& text);

// Whether a list flag may name a value twice: a sweep may measure one size twice; a list of
// layouts or variants would run one twice.
enum class Repeats { allowed, refused };

// The course's one parser of an integer-list flag: "256,512,1K" -> {256, 512, 1024}, each item a
// size (parse_size), in [lo, hi]; at least one, no empty item, none twice under Repeats::refused.
// Otherwise one UsageError naming `what`, the bad item and the range, e.g.
//   --tp expects a comma-separated list of integers in 1..4096; got 'x'
//   --sizes expects a comma-separated list of integers in 1..16384; got an empty item in '1,,2'
//   --tp lists 2 twice
std::vector<std::int64_t> parse_size_list(const std::string& text, const std::string& what, std::int64_t lo,
                                          std::int64_t hi, Repeats repeats = Repeats::allowed);
// The same list as ints (lo and hi are ints, so every value fits), for flags whose values are
// rank counts or matrix sizes.
std::vector<int> parse_int_list(const std::string& text, const std::string& what, int lo, int hi,
                                Repeats repeats = Repeats::allowed);

// A list of names, each one of `choices`, none twice, at least one; returns each item's index in
// `choices`. The same errors, e.g.
//   --attention expects a comma-separated list of ring,all-gather,all-to-all; got 'banana'
//   --sharding lists zig-zag twice
std::vector<std::size_t> parse_choice_list(const std::string& text, const std::string& what,
                                           const std::vector<std::string>& choices);
// The same for a list of enum values: choices[i] is named name(choices[i]).
template <class E>
std::vector<E> parse_choice_list(const std::string& text, const std::string& what, const std::vector<E>& choices,
                                 const char* (*name)(E)) {
  std::vector<std::string> names;
  for (E e : choices) names.emplace_back(name(e));
  std::vector<E> out;
  for (std::size_t i : parse_choice_list(text, what, names)) out.push_back(choices[i]);
  return out;
}

}  // namespace usp
