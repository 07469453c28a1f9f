#include "common/cli.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/error.hpp"
#include "common/json.hpp"
#include "common/number_text.hpp"

namespace usp {

namespace {

// from_chars refuses a leading '+'; a user may well write one.
const char* skip_plus(const std::string& text) {
  return text.size() > 1 && text[0] == '+' && text[1] != '-' ? text.data() + 1 : text.data();
}

// "123", "64K", "1G" read exactly: kNotNumber (no leading integer), kBadSuffix, kTooLarge or
// kTooSmall (beyond 64 bits, before or after the suffix), else kOk with `out` set.
enum class SizeRead { kOk, kNotNumber, kBadSuffix, kTooLarge, kTooSmall };

SizeRead read_size(const std::string& text, std::int64_t& out) {
  const char* end = text.data() + text.size();
  std::int64_t v = 0;
  const auto [rest, ec] = std::from_chars(skip_plus(text), end, v);
  if (ec == std::errc::invalid_argument) return SizeRead::kNotNumber;
  if (ec == std::errc::result_out_of_range) return text[0] == '-' ? SizeRead::kTooSmall : SizeRead::kTooLarge;
  const std::string suffix(rest, end);
  int shift = 0;
  if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M") shift = 20;
  else if (suffix == "G") shift = 30;
  else if (!suffix.empty()) return SizeRead::kBadSuffix;
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() >> shift;
  if (v > limit) return SizeRead::kTooLarge;
  if (v < -limit - 1) return SizeRead::kTooSmall;
  out = v * (std::int64_t{1} << shift);
  return SizeRead::kOk;
}

}  // namespace

std::int64_t parse_size(const std::string& text, const std::string& what) {
  std::int64_t v = 0;
  switch (read_size(text, v)) {
    case SizeRead::kOk: return v;
    case SizeRead::kNotNumber:
      if (text.empty()) throw UsageError(what + " expects an integer, got an empty value");
      throw UsageError(what + " expects an integer, got '" + text + "'");
    case SizeRead::kBadSuffix:
      throw UsageError(what + " expects an integer (optionally with K, M or G), got '" + text + "'");
    case SizeRead::kTooLarge:
    case SizeRead::kTooSmall: break;
  }
  throw UsageError(what + " does not fit in a 64-bit integer, got '" + text + "'");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma = text.find(','); comma != std::string::npos; comma = text.find(',', start)) {
    items.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  items.push_back(text.substr(start));
  return items;
}

std::vector<std::int64_t> parse_size_list(const std::string& text, const std::string& what, std::int64_t lo,
                                          std::int64_t hi, Repeats repeats) {
  const std::string expects =
      what + " expects a comma-separated list of integers in " + std::to_string(lo) + ".." + std::to_string(hi) + "; ";
  if (text.empty()) throw UsageError(expects + "got an empty value");
  std::vector<std::int64_t> out;
  for (const std::string& item : split_list(text)) {
    if (item.empty()) throw UsageError(expects + "got an empty item in '" + text + "'");
    std::int64_t v = 0;
    if (read_size(item, v) != SizeRead::kOk || v < lo || v > hi) throw UsageError(expects + "got '" + item + "'");
    if (repeats == Repeats::refused && std::find(out.begin(), out.end(), v) != out.end())
      throw UsageError(what + " lists " + std::to_string(v) + " twice");
    out.push_back(v);
  }
  return out;
}

std::vector<std::size_t> parse_choice_list(const std::string& text, const std::string& what,
                                           const std::vector<std::string>& choices) {
  std::string names;
  for (const std::string& c : choices) names += (names.empty() ? "" : ",") + c;
  const std::string expects = what + " expects a comma-separated list of " + names + "; ";
  if (text.empty()) throw UsageError(expects + "got an empty value");
  std::vector<std::size_t> out;
  for (const std::string& item : split_list(text)) {
    if (item.empty()) throw UsageError(expects + "got an empty item in '" + text + "'");
    const auto it = std::find(choices.begin(), choices.end(), item);
    if (it == choices.end()) throw UsageError(expects + "got '" + item + "'");
    const auto i = static_cast<std::size_t>(it - choices.begin());
    if (std::find(out.begin(), out.end(), i) != out.end()) throw UsageError(what + " lists " + item + " twice");
    out.push_back(i);
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& what, int lo, int hi, Repeats repeats) {
  std::vector<int> out;
  for (std::int64_t v : parse_size_list(text, what, lo, hi, repeats)) out.push_back(static_cast<int>(v));
  return out;
}

Cli::Cli(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

Cli::Option& Cli::declare(const std::string& name, Kind kind, const std::string& help) {
  for (const Option& d : options_)
    if (d.name == name) throw Error("Cli: flag --" + name + " declared twice");
  Option& o = options_.emplace_back();
  o.name = name;
  o.kind = kind;
  o.help = help;
  for (auto it = refused_.begin(); it != refused_.end(); ++it)
    if (it->first == name) {  // refused before it was declared
      o.refused = it->second;
      refused_.erase(it);
      break;
    }
  return o;
}

Cli& Cli::add_int(const std::string& name, std::int64_t def, const std::string& help, std::int64_t min,
                  std::int64_t max) {
  Option& o = declare(name, Kind::integer, help);
  o.imin = min;
  o.imax = max;
  o.integer = def;
  return *this;
}

Cli& Cli::add_float(const std::string& name, double def, const std::string& help, double min, double max) {
  Option& o = declare(name, Kind::real, help);
  o.min = min;
  o.max = max;
  o.real = def;
  return *this;
}

Cli& Cli::add_string(const std::string& name, const std::string& def, const std::string& help) {
  declare(name, Kind::text, help).text = def;
  return *this;
}

Cli& Cli::add_choice(const std::string& name, const std::string& def, const std::vector<std::string>& choices,
                     const std::string& help) {
  Option& o = declare(name, Kind::choice, help);
  o.choices = choices;
  o.text = def;
  return *this;
}

Cli& Cli::add_flag(const std::string& name, const std::string& help) {
  declare(name, Kind::flag, help);
  return *this;
}

Cli& Cli::refuse(const std::string& name, const std::string& why) {
  for (Option& o : options_)
    if (o.name == name) {  // declared (a shared flag this program does not act on): it keeps its default
      o.refused = why;
      return *this;
    }
  refused_.emplace_back(name, why);
  return *this;
}

Cli& Cli::add_common(const std::string& default_out) {
  add_int("seed", 1234, "seed of every random number (weights, data)", 0);
  add_string("device", "auto",
             "auto | cpu | cuda | cuda:N | cpu:1 (auto: a GPU per rank if one is visible; cpu:1: the emulated "
             "device, host memory under another name, for checking what a GPU run puts where)");
  add_choice("backend", "auto", {"auto", "mpi", "nccl", "host-staged"},
             "communication backend for device tensors");
  add_string("out", default_out, "directory for summary.json, CSVs and traces");
  return *this;
}

Cli& Cli::add_steps(std::int64_t def) { return add_int("steps", def, "training steps", 1); }

void Cli::set(Option& opt, const std::string& text) {
  const std::string flag = "--" + opt.name;
  if (!opt.refused.empty()) throw UsageError(flag + ": " + opt.refused);
  // A second value would silently replace the first: which one the user meant is not ours to guess.
  if (opt.given)
    throw UsageError(flag + " is given twice ('" + opt.given_text + "', then '" + text + "'): give it once");
  opt.given_text = text;
  switch (opt.kind) {
    case Kind::integer: {
      std::int64_t v = 0;
      const SizeRead r = read_size(text, v);
      if (r == SizeRead::kNotNumber || r == SizeRead::kBadSuffix) parse_size(text, flag);  // throws its message
      if (r == SizeRead::kTooSmall || (r == SizeRead::kOk && v < opt.imin))
        throw UsageError(flag + " must be >= " + std::to_string(opt.imin) + ", got " + text);
      if (r == SizeRead::kTooLarge || v > opt.imax)
        throw UsageError(flag + " must be <= " + std::to_string(opt.imax) + ", got " + text);
      opt.integer = v;
      break;
    }
    case Kind::real: {
      double v = 0;
      const char* end = text.data() + text.size();
      const auto [rest, ec] = std::from_chars(skip_plus(text), end, v);
      if (text.empty() || ec != std::errc() || rest != end || !std::isfinite(v))
        throw UsageError(flag + " expects a number, got '" + text + "'");
      if (v < opt.min) throw UsageError(flag + " must be >= " + format_double(opt.min) + ", got " + text);
      if (v > opt.max) throw UsageError(flag + " must be <= " + format_double(opt.max) + ", got " + text);
      opt.real = v;
      break;
    }
    case Kind::choice: {
      std::string list;
      for (const auto& c : opt.choices) list += (list.empty() ? "" : ", ") + c;
      if (std::find(opt.choices.begin(), opt.choices.end(), text) == opt.choices.end())
        throw UsageError(flag + " must be one of " + list + ", got '" + text + "'");
      opt.text = text;
      break;
    }
    case Kind::text:
      // An empty value is never a choice the program can act on: a file, a list or a name left blank
      // (often an unset shell variable) would otherwise read as "not given".
      if (text.empty()) throw UsageError(flag + " needs a value, got an empty one");
      opt.text = text;
      break;
    case Kind::flag:
      // CLI11 hands a bare switch over as "true" and --name=VALUE as VALUE.
      if (text != "true" && text != "false")
        throw UsageError(flag + " is a switch: give it alone or as " + flag + "=true|false");
      opt.flag = text == "true";
      break;
  }
  opt.given = true;
}

void Cli::parse(int argc, const char* const* argv) {
  // --help (or -h) ends the command line: what precedes it is checked, what follows is not.
  int n = 1;
  while (n < argc && std::string(argv[n]) != "--help" && std::string(argv[n]) != "-h") ++n;
  for (int i = 1; i < n; ++i)
    if (std::string(argv[i]) == "--")  // CLI11 would read what follows as positional arguments
      throw UsageError("unexpected argument '--' (flags look like --name value; see --help)");

  // CLI11 splits the line into flags and values; each value is checked by set() as its flag is
  // met (trigger_on_parse), so the first mistake on the line is the one reported.
  for (Option& o : options_) o.given = false;  // a second parse() starts afresh (values stay as they were)
  CLI::App app(summary_, program_);
  app.set_help_flag();  // handled above
  app.allow_extras();   // unknown arguments: collected, reported below in our words
  for (Option& o : options_) {
    CLI::Option* c = o.kind == Kind::flag ? app.add_flag("--" + o.name) : app.add_option("--" + o.name);
    c->each([&o](const std::string& text) { set(o, text); })->trigger_on_parse();
  }
  try {
    app.parse(n, argv);
  } catch (const CLI::ArgumentMismatch&) {
    // The one mismatch a declared flag raises: it takes a value and ends the line.
    const std::string last = argv[n - 1];  // "--steps", or "--steps=" with nothing after
    const std::string flag = last.substr(0, last.find('='));
    for (const Option& o : options_)
      if (flag == "--" + o.name && !o.refused.empty()) throw UsageError(flag + ": " + o.refused);
    throw UsageError(flag + " needs a value (see --help)");
  } catch (const CLI::ParseError& e) {
    throw UsageError(std::string(e.what()) + " (see --help)");
  }
  for (const std::string& arg : app.remaining()) {
    if (arg.rfind("--", 0) == 0 && arg.size() > 2) {
      const std::string flag = arg.substr(0, arg.find('='));
      for (const auto& [name, why] : refused_)
        if (flag == "--" + name) throw UsageError(flag + ": " + why);
      throw UsageError("unknown flag " + flag + " (see --help)");
    }
    throw UsageError("unexpected argument '" + arg + "' (flags look like --name value; see --help)");
  }
  help_ = n < argc;
}

std::string Cli::help() const {
  CLI::App app(summary_, program_);
  app.set_help_flag("-h,--help", "print this message");
  app.get_formatter()->column_width(26);
  for (const Option& o : options_) {
    if (!o.refused.empty()) continue;  // refused here: not offered
    std::string text = o.help, type, def;
    switch (o.kind) {
      case Kind::integer: type = "N", def = std::to_string(o.integer); break;
      case Kind::real: type = "X", def = format_double(o.real); break;
      case Kind::text: type = "TEXT", def = o.text; break;
      case Kind::choice: {
        type = "CHOICE", def = o.text;
        std::string list;
        for (const auto& c : o.choices) list += (list.empty() ? "" : "|") + c;
        text += " (" + list + ")";
        break;
      }
      case Kind::flag: break;
    }
    // const: CLI11 reads a non-const string here as a variable to assign the value to.
    const std::string description = o.kind == Kind::flag ? text : text + " [default: " + def + "]";
    if (o.kind == Kind::flag) app.add_flag("--" + o.name, description);
    else app.add_option("--" + o.name, description)->type_name(type);
  }
  return app.help();
}

const Cli::Option& Cli::find(const std::string& name, Kind kind) const {
  for (const Option& o : options_) {
    if (o.name != name) continue;
    const bool compatible = o.kind == kind || (kind == Kind::text && o.kind == Kind::choice);
    if (!compatible) throw Error("Cli: flag --" + name + " read with the wrong type");
    return o;
  }
  throw Error("Cli: no flag --" + name + " was declared");
}

std::int64_t Cli::get_int(const std::string& name) const { return find(name, Kind::integer).integer; }
double Cli::get_float(const std::string& name) const { return find(name, Kind::real).real; }
const std::string& Cli::get_string(const std::string& name) const { return find(name, Kind::text).text; }
bool Cli::get_flag(const std::string& name) const { return find(name, Kind::flag).flag; }

bool Cli::declared(const std::string& name) const {
  for (const Option& o : options_)
    if (o.name == name) return true;
  return false;
}

bool Cli::given(const std::string& name) const {
  for (const Option& o : options_)
    if (o.name == name) return o.given;
  throw Error("Cli: no flag --" + name + " was declared");
}

std::string Cli::values_json() const {
  JsonWriter w;
  w.begin_object();
  for (const Option& o : options_) {
    w.key(o.name);
    switch (o.kind) {
      case Kind::integer: w.value(o.integer); break;
      case Kind::real: w.value(o.real); break;
      case Kind::flag: w.value(o.flag); break;
      case Kind::text:
      case Kind::choice: w.value(o.text); break;
    }
  }
  w.end_object();
  return w.str();
}

}  // namespace usp
