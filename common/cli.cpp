#include "common/cli.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/error.hpp"
#include "common/json.hpp"

namespace usp {

namespace {

const char* kind_hint(bool integer) { return integer ? "an integer" : "a number"; }

std::string format_double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::int64_t parse_size(const std::string& text, const std::string& what) {
  if (text.empty()) throw UsageError(what + " expects an integer, got an empty value");
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    throw UsageError(what + " expects an integer, got '" + text + "'");
  }
  std::int64_t scale = 1;
  const std::string suffix = text.substr(used);
  if (suffix == "K" || suffix == "k") scale = 1ll << 10;
  else if (suffix == "M") scale = 1ll << 20;
  else if (suffix == "G") scale = 1ll << 30;
  else if (!suffix.empty())
    throw UsageError(what + " expects an integer (optionally with K, M or G), got '" + text + "'");
  return static_cast<std::int64_t>(v) * scale;
}

Cli::Cli(std::string program, std::string summary) : program_(std::move(program)), summary_(std::move(summary)) {}

Cli& Cli::add_int(const std::string& name, std::int64_t def, const std::string& help, std::int64_t min,
                  std::int64_t max) {
  Option o{Kind::integer, help, std::to_string(def), {}, 0, 0, min, max, false};
  options_[name] = o;
  order_.push_back(name);
  return *this;
}

Cli& Cli::add_float(const std::string& name, double def, const std::string& help, double min, double max) {
  Option o{Kind::real, help, format_double(def), {}, min, max, 0, 0, false};
  options_[name] = o;
  order_.push_back(name);
  return *this;
}

Cli& Cli::add_string(const std::string& name, const std::string& def, const std::string& help) {
  options_[name] = Option{Kind::text, help, def, {}, 0, 0, 0, 0, false};
  order_.push_back(name);
  return *this;
}

Cli& Cli::add_choice(const std::string& name, const std::string& def, const std::vector<std::string>& choices,
                     const std::string& help) {
  options_[name] = Option{Kind::choice, help, def, choices, 0, 0, 0, 0, false};
  order_.push_back(name);
  return *this;
}

Cli& Cli::add_flag(const std::string& name, const std::string& help) {
  options_[name] = Option{Kind::flag, help, "false", {}, 0, 0, 0, 0, false};
  order_.push_back(name);
  return *this;
}

Cli& Cli::add_common(const std::string& default_out) {
  add_int("seed", 1234, "seed of every random number (weights, data)", 0);
  add_string("device", "auto", "auto | cpu | cuda | cuda:N (auto: a GPU per rank if one is visible)");
  add_choice("backend", "auto", {"auto", "mpi", "nccl", "host-staged"},
             "communication backend for device tensors");
  add_string("out", default_out, "directory for summary.json, CSVs and traces");
  return *this;
}

Cli& Cli::add_steps(std::int64_t def) { return add_int("steps", def, "training steps", 1); }

void Cli::set(const std::string& name, Option& opt, const std::string& text) {
  const std::string flag = "--" + name;
  switch (opt.kind) {
    case Kind::integer: {
      const std::int64_t v = parse_size(text, flag);
      if (v < opt.imin) throw UsageError(flag + " must be >= " + std::to_string(opt.imin) + ", got " + text);
      if (v > opt.imax) throw UsageError(flag + " must be <= " + std::to_string(opt.imax) + ", got " + text);
      opt.value = std::to_string(v);
      break;
    }
    case Kind::real: {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || !std::isfinite(v))
        throw UsageError(flag + " expects " + kind_hint(false) + ", got '" + text + "'");
      if (v < opt.min) throw UsageError(flag + " must be >= " + format_double(opt.min) + ", got " + text);
      if (v > opt.max) throw UsageError(flag + " must be <= " + format_double(opt.max) + ", got " + text);
      opt.value = text;
      break;
    }
    case Kind::choice: {
      bool ok = false;
      std::string list;
      for (const auto& c : opt.choices) {
        ok = ok || c == text;
        list += (list.empty() ? "" : ", ") + c;
      }
      if (!ok) throw UsageError(flag + " must be one of " + list + ", got '" + text + "'");
      opt.value = text;
      break;
    }
    case Kind::text: opt.value = text; break;
    case Kind::flag: opt.value = text; break;
  }
  opt.given = true;
}

void Cli::parse(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help_ = true;
      return;
    }
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw UsageError("unexpected argument '" + arg + "' (flags look like --name value; see --help)");
    std::string name = arg.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = options_.find(name);
    if (it == options_.end()) throw UsageError("unknown flag --" + name + " (see --help)");
    Option& opt = it->second;
    if (opt.kind == Kind::flag) {
      if (has_value && value != "true" && value != "false")
        throw UsageError("--" + name + " is a switch: give it alone or as --" + name + "=true|false");
      set(name, opt, has_value ? value : "true");
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError("--" + name + " needs a value (see --help)");
      value = argv[++i];
    }
    set(name, opt, value);
  }
}

std::string Cli::help() const {
  std::ostringstream os;
  os << "usage: " << program_ << " [flags]\n\n" << summary_ << "\n\nflags:\n";
  for (const auto& name : order_) {
    const Option& o = options_.at(name);
    std::string left = "  --" + name;
    switch (o.kind) {
      case Kind::integer: left += " N"; break;
      case Kind::real: left += " X"; break;
      case Kind::text: left += " TEXT"; break;
      case Kind::choice: left += " CHOICE"; break;
      case Kind::flag: break;
    }
    if (left.size() < 26) left += std::string(26 - left.size(), ' ');
    else left += "\n" + std::string(26, ' ');
    os << left << o.help;
    if (o.kind == Kind::choice) {
      os << " (";
      for (std::size_t i = 0; i < o.choices.size(); ++i) os << (i ? "|" : "") << o.choices[i];
      os << ')';
    }
    if (o.kind != Kind::flag) os << " [default: " << o.value << ']';
    os << '\n';
  }
  os << "  --help                  print this message\n";
  return os.str();
}

const Cli::Option& Cli::find(const std::string& name, Kind kind) const {
  auto it = options_.find(name);
  if (it == options_.end()) throw Error("Cli: no flag --" + name + " was declared");
  const bool compatible = it->second.kind == kind ||
                          (kind == Kind::text && it->second.kind == Kind::choice);
  if (!compatible) throw Error("Cli: flag --" + name + " read with the wrong type");
  return it->second;
}

std::int64_t Cli::get_int(const std::string& name) const { return std::stoll(find(name, Kind::integer).value); }
double Cli::get_float(const std::string& name) const { return std::stod(find(name, Kind::real).value); }
const std::string& Cli::get_string(const std::string& name) const { return find(name, Kind::text).value; }
bool Cli::get_flag(const std::string& name) const { return find(name, Kind::flag).value == "true"; }

bool Cli::given(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) throw Error("Cli: no flag --" + name + " was declared");
  return it->second.given;
}

std::string Cli::values_json() const {
  JsonWriter w;
  w.begin_object();
  for (const auto& name : order_) {
    const Option& o = options_.at(name);
    w.key(name);
    switch (o.kind) {
      case Kind::integer: w.value(static_cast<std::int64_t>(std::stoll(o.value))); break;
      case Kind::real: w.value(std::stod(o.value)); break;
      case Kind::flag: w.value(o.value == "true"); break;
      default: w.value(o.value); break;
    }
  }
  w.end_object();
  return w.str();
}

}  // namespace usp
