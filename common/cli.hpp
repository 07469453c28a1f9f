// Cli: the command line of every executable. Flags are declared with their default, their help
// line and their limits; --help prints them all. A bad value gets one message naming the flag,
// what it expects and what it got (usp::UsageError), e.g.
//   error: --steps must be >= 1, got 0
//   error: unknown flag --stpes (see --help)
// Forms accepted: --name value, --name=value, and --flag for booleans. Integers accept the
// suffixes K, M, G (powers of 1024), so --max-bytes 64M works.
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
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

  // The flags every executable shares: --seed, --device (auto|cpu|cuda[:N]),
  // --backend (auto|mpi|nccl|host-staged), --out DIR.
  Cli& add_common(const std::string& default_out);
  // Training executables add --steps too.
  Cli& add_steps(std::int64_t def);

  // Throws UsageError on the first problem. --help sets help_requested() and stops parsing.
  void parse(int argc, const char* const* argv);
  bool help_requested() const { return help_; }
  std::string help() const;

  std::int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;  // strings and choices
  bool get_flag(const std::string& name) const;
  bool given(const std::string& name) const;  // set on the command line, not defaulted
  // The parsed values as one JSON object {"name": value, ...}, for summary.json.
  std::string values_json() const;

 private:
  enum class Kind { integer, real, text, choice, flag };
  struct Option {
    Kind kind;
    std::string help;
    std::string value;  // canonical text of the current value
    std::vector<std::string> choices;
    double min = 0, max = 0;
    std::int64_t imin = 0, imax = 0;
    bool given = false;
  };
  const Option& find(const std::string& name, Kind kind) const;
  void set(const std::string& name, Option& opt, const std::string& text);

  std::string program_, summary_;
  std::vector<std::string> order_;
  std::map<std::string, Option> options_;
  bool help_ = false;
};

// Parses "123", "64K", "64M", "1G" (powers of 1024); throws UsageError naming `what`.
std::int64_t parse_size(const std::string& text, const std::string& what);

}  // namespace usp
