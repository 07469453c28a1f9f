#include "common/io/checkpoint.hpp"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/io/input_file.hpp"
#include "common/io/json_value.hpp"
#include "common/io/output_file.hpp"
#include "common/io/safetensors.hpp"
#include "common/json.hpp"
#include "common/number_text.hpp"

namespace usp {

namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kTrainerFile = "trainer_state.json";

std::string in_dir(const std::string& dir, const char* file) { return (fs::path(dir) / file).string(); }
std::string who(const std::string& dir) { return "checkpoint '" + dir + "'"; }

// The directory exists, and so does the file in it; else the clear message.
std::string need_file(const std::string& dir, const char* file, const char* hint = "") {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw UsageError(who(dir) + " not found (no such directory)");
  if (!fs::is_directory(dir, ec)) throw UsageError(who(dir) + " is not a directory (a checkpoint is a directory of files)");
  const std::string path = in_dir(dir, file);
  if (!fs::exists(path, ec)) throw UsageError(who(dir) + " has no " + file + hint);
  require_input_file(path, who(dir) + ": its file");
  return path;
}

// A weight read from a checkpoint must be a number: a NaN or an infinity (a run saved after it
// diverged, a damaged file) would train or evaluate to NaN without a word. UsageError naming the
// file, the tensor and the first bad element.
void require_finite_tensor(const std::string& dir, const char* file, const std::string& name, const Tensor& t) {
  const std::vector<float> values = t.to_floats();
  for (std::size_t k = 0; k < values.size(); ++k)
    if (!std::isfinite(values[k]))
      throw UsageError(who(dir) + ": " + file + " holds a non-finite value (" + format_double(values[k]) +
                       ") in tensor '" + name + "', element " + std::to_string(k) + "; a checkpoint of a diverged run?");
}

// The shortest decimal that reads back as the same double ("1e-05", "0.02"; integral values
// as "10000.0"), always with a '.' or an exponent so Python reads a float: nlohmann's number
// format, the one config.json is written in.
std::string shortest_double(double v) { return JsonValue(v).dump(); }

const char* torch_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::bf16: return "bfloat16";
    case DType::f16: return "float16";
    default: throw Error(std::string("checkpoint: parameters of dtype ") + dtype_name(t) + " cannot be saved");
  }
}

// ---- reading config.json fields with the checkpoint's name in every message ----------------

class ConfigReader {
 public:
  ConfigReader(const std::string& dir) : dir_(dir), root_(read_json_file(need_file(dir, kConfigFile), "config file")) {
    if (!root_.is_object()) fail("config.json must hold a JSON object");
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw UsageError(who(dir_) + ": " + problem);
  }
  const JsonValue* find(const char* key) const {
    const auto it = root_.find(key);
    return it != root_.end() && !it->is_null() ? &*it : nullptr;
  }
  std::int64_t integer(const char* key, std::int64_t def, bool required = false) const {
    const JsonValue* v = find(key);
    if (!v) {
      if (required) fail(std::string("config.json has no ") + key);
      return def;
    }
    if (!v->is_number_integer()) fail(std::string("config.json: ") + key + " must be an integer");
    try {
      return json_int64(*v);
    } catch (const UsageError& e) {
      fail(std::string("config.json: ") + key + ": " + e.what());
    }
  }
  double real(const char* key, double def) const {
    const JsonValue* v = find(key);
    if (!v) return def;
    if (!v->is_number()) fail(std::string("config.json: ") + key + " must be a number");
    return v->get<double>();
  }
  bool boolean(const char* key, bool def) const {
    const JsonValue* v = find(key);
    if (!v) return def;
    if (!v->is_boolean()) fail(std::string("config.json: ") + key + " must be true or false");
    return v->get<bool>();
  }
  std::string text(const char* key, const std::string& def) const {
    const JsonValue* v = find(key);
    if (!v) return def;
    if (!v->is_string()) fail(std::string("config.json: ") + key + " must be a string");
    return v->get<std::string>();
  }
  bool present(const char* key) const { return find(key) != nullptr; }

 private:
  std::string dir_;
  JsonValue root_;
};

std::string meta(const SafetensorsFile& f, const std::string& dir, const char* key) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw UsageError(who(dir) + ": optimizer.safetensors metadata has no '" + key + "'");
  return it->second;
}

std::int64_t meta_int(const SafetensorsFile& f, const std::string& dir, const char* key) {
  const std::string s = meta(f, dir, key);
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0')
    throw UsageError(who(dir) + ": optimizer.safetensors metadata '" + key + "' is not an integer: " + s);
  return v;
}

double meta_double(const SafetensorsFile& f, const std::string& dir, const char* key) {
  const std::string s = meta(f, dir, key);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0')
    throw UsageError(who(dir) + ": optimizer.safetensors metadata '" + key + "' is not a number: " + s);
  return v;
}

}  // namespace

// ---- saving --------------------------------------------------------------------------------

std::string hf_config_json(const ModelConfig& c, DType dtype) {
  // transformers' LlamaConfig keys, in this order; doubles as floats ("10000.0") for Python.
  // With experts, transformers' MixtralConfig (same keys, plus the experts').
  JsonValue j;
  j["architectures"] = JsonValue::array({c.is_moe() ? "MixtralForCausalLM" : "LlamaForCausalLM"});
  j["model_type"] = c.is_moe() ? "mixtral" : "llama";
  j["attention_bias"] = false;
  j["attention_dropout"] = 0.0;
  j["bos_token_id"] = nullptr;  // byte-level vocabulary: no special tokens
  j["eos_token_id"] = nullptr;
  j["head_dim"] = c.head_dim();
  j["hidden_act"] = "silu";
  j["hidden_size"] = c.hidden;
  j["initializer_range"] = c.init_std;
  j["intermediate_size"] = c.ffn;
  j["max_position_embeddings"] = c.max_seq;
  j["mlp_bias"] = false;
  j["num_attention_heads"] = c.heads;
  j["num_hidden_layers"] = c.layers;
  j["num_key_value_heads"] = c.kv_heads;
  j["pretraining_tp"] = 1;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_scaling"] = nullptr;
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = c.tied_embeddings;
  j["torch_dtype"] = torch_dtype_name(dtype);
  j["use_cache"] = true;
  j["vocab_size"] = c.vocab;
  if (c.is_moe()) {
    j["num_local_experts"] = c.experts;
    j["num_experts_per_tok"] = c.experts_per_token;
    j["router_aux_loss_coef"] = c.router_aux_loss_coef;
    j["router_jitter_noise"] = 0.0;
    j["output_router_logits"] = false;
    j["sliding_window"] = nullptr;
    // Not Mixtral's: transformers routes dropless and ignores it; usp_eval applies it.
    j["usp_capacity_factor"] = c.capacity_factor;
  }
  j["usp_model"] = c.name;
  return j.dump(2) + "\n";
}

void save_checkpoint(const std::string& dir, const ParamStore& params, const AdamW* opt, const TrainerState* state) {
  make_dirs(dir);

  std::vector<NamedTensor> tensors;
  for (std::size_t i = 0; i < params.infos().size(); ++i)
    tensors.push_back({params.infos()[i].name, params.param(static_cast<int>(i))});
  write_safetensors(in_dir(dir, kModelFile), tensors, {{"format", "pt"}});
  write_file_atomic(in_dir(dir, kConfigFile), hf_config_json(params.config(), params.dtype()));

  std::error_code ec;
  if (opt) {
    const AdamW& o = *opt;
    std::vector<NamedTensor> state_tensors = {{"adamw.m", o.m()}, {"adamw.v", o.v()}};
    if (o.master().defined()) state_tensors.push_back({"adamw.master", o.master()});
    const AdamWConfig& c = o.config();
    write_safetensors(in_dir(dir, kOptimizerFile), state_tensors,
                      {{"format", "usp-adamw"},
                       {"step", std::to_string(o.step_count())},
                       {"begin", std::to_string(o.begin())},
                       {"end", std::to_string(o.end())},
                       {"lr", shortest_double(c.lr)},
                       {"beta1", shortest_double(c.beta1)},
                       {"beta2", shortest_double(c.beta2)},
                       {"eps", shortest_double(c.eps)},
                       {"weight_decay", shortest_double(c.weight_decay)}});
  } else {
    fs::remove(in_dir(dir, kOptimizerFile), ec);
  }

  if (state) {
    JsonWriter w;
    w.begin_object();
    w.field("step", state->step);
    w.field("seed", state->seed);
    w.field("data", state->data);
    w.field("seq", state->seq);
    w.field("global_batch", state->global_batch);
    w.key("losses").array(state->losses);  // shortest round-trip text: every double reads back exactly
    w.end_object();
    write_file_atomic(in_dir(dir, kTrainerFile), w.str() + "\n");
  } else {
    fs::remove(in_dir(dir, kTrainerFile), ec);
  }
}

// ---- loading -------------------------------------------------------------------------------

ModelConfig load_config(const std::string& dir) {
  const ConfigReader r(dir);
  const std::string model_type = r.text("model_type", "llama");
  if (model_type != "llama" && model_type != "mixtral")
    r.fail("config.json: model_type is '" + model_type + "', only 'llama' and 'mixtral' are supported");
  const std::string act = r.text("hidden_act", "silu");
  if (act != "silu") r.fail("config.json: hidden_act is '" + act + "', only 'silu' (SwiGLU) is supported");
  if (r.present("rope_scaling")) r.fail("config.json: rope_scaling is set; only plain RoPE (rope_scaling null) is supported");
  if (r.boolean("attention_bias", false)) r.fail("config.json: attention_bias is true; the model has no biases");
  if (r.boolean("mlp_bias", false)) r.fail("config.json: mlp_bias is true; the model has no biases");
  if (r.integer("pretraining_tp", 1) != 1) r.fail("config.json: pretraining_tp must be 1");

  ModelConfig c;
  const std::string base = fs::path(dir).lexically_normal().filename().string();
  c.name = r.text("usp_model", base.empty() ? "checkpoint" : base);
  c.vocab = r.integer("vocab_size", 0, true);
  c.hidden = r.integer("hidden_size", 0, true);
  c.layers = r.integer("num_hidden_layers", 0, true);
  c.heads = r.integer("num_attention_heads", 0, true);
  c.kv_heads = r.integer("num_key_value_heads", c.heads);  // transformers' default: no GQA
  c.ffn = r.integer("intermediate_size", 0, true);
  c.max_seq = r.integer("max_position_embeddings", 2048);
  c.rope_theta = r.real("rope_theta", 10000.0);
  c.norm_eps = r.real("rms_norm_eps", 1e-6);
  c.init_std = r.real("initializer_range", 0.02);
  c.tied_embeddings = r.boolean("tie_word_embeddings", false);
  if (model_type == "mixtral") {
    c.experts = r.integer("num_local_experts", 0, true);
    c.experts_per_token = r.integer("num_experts_per_tok", 2);
    c.router_aux_loss_coef = r.real("router_aux_loss_coef", 0.001);  // transformers' default
    c.capacity_factor = r.real("usp_capacity_factor", 0.0);
    if (r.real("router_jitter_noise", 0.0) != 0.0)
      r.fail("config.json: router_jitter_noise is not 0; the router here is deterministic");
  }
  if (c.heads >= 1 && c.hidden % c.heads == 0) {
    const std::int64_t head_dim = r.integer("head_dim", c.hidden / c.heads);
    if (head_dim != c.hidden / c.heads)
      r.fail("config.json: head_dim " + std::to_string(head_dim) + " differs from hidden_size / num_attention_heads = " +
             std::to_string(c.hidden / c.heads) + "; the model needs them equal");
  }
  try {
    c.validate();
  } catch (const UsageError& e) {
    r.fail(std::string("config.json: ") + e.what());
  }
  return c;
}

DType load_dtype(const std::string& dir) {
  const ConfigReader r(dir);
  const std::string t = r.text("torch_dtype", "float32");
  if (t == "float32") return DType::f32;
  if (t == "bfloat16") return DType::bf16;
  if (t == "float16") return DType::f16;
  r.fail("config.json: torch_dtype '" + t + "' is not supported (float32, bfloat16, float16)");
}

void load_params(const std::string& dir, ParamStore& params) {
  const ModelConfig saved = load_config(dir);
  const ModelConfig& ours = params.config();
  auto same = [&](const char* what, std::int64_t a, std::int64_t b) {
    if (a != b)
      throw UsageError(who(dir) + ": config.json has " + what + " = " + std::to_string(a) + ", the model has " +
                       std::to_string(b));
  };
  same("vocab_size", saved.vocab, ours.vocab);
  same("hidden_size", saved.hidden, ours.hidden);
  same("num_hidden_layers", saved.layers, ours.layers);
  same("num_attention_heads", saved.heads, ours.heads);
  same("num_key_value_heads", saved.kv_heads, ours.kv_heads);
  same("intermediate_size", saved.ffn, ours.ffn);
  same("tie_word_embeddings", saved.tied_embeddings, ours.tied_embeddings);
  same("num_local_experts", saved.experts, ours.experts);
  if (ours.is_moe()) same("num_experts_per_tok", saved.experts_per_token, ours.experts_per_token);

  const SafetensorsFile file(need_file(dir, kModelFile));
  std::set<std::string> expected;
  for (const ParamInfo& p : params.infos()) expected.insert(p.name);
  for (const SafetensorsEntry& e : file.entries())
    if (!expected.count(e.name))
      throw UsageError(who(dir) + ": model.safetensors has unexpected tensor '" + e.name + "' (not a parameter of " +
                       ours.str() + ")");
  for (std::size_t i = 0; i < params.infos().size(); ++i) {
    const ParamInfo& p = params.infos()[i];
    if (!file.has(p.name)) throw UsageError(who(dir) + ": model.safetensors has no tensor '" + p.name + "'");
    const SafetensorsEntry& e = file.entry(p.name);
    if (e.dtype != params.dtype())
      throw UsageError(who(dir) + ": model.safetensors holds '" + p.name + "' as " + safetensors_dtype_name(e.dtype) +
                       ", the model's parameters are " + safetensors_dtype_name(params.dtype()));
    if (e.shape != p.shape)
      throw UsageError(who(dir) + ": model.safetensors holds '" + p.name + "' as " + shape_str(e.shape) +
                       ", the model expects " + shape_str(p.shape));
    file.read_into(p.name, params.param(static_cast<int>(i)));
    require_finite_tensor(dir, kModelFile, p.name, params.param(static_cast<int>(i)));
  }
}

bool has_optimizer_state(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(in_dir(dir, kOptimizerFile), ec);
}

AdamWConfig load_optimizer_config(const std::string& dir) {
  const SafetensorsFile file(need_file(dir, kOptimizerFile, " (it was saved without optimizer state)"));
  AdamWConfig c;
  c.lr = meta_double(file, dir, "lr");
  c.beta1 = meta_double(file, dir, "beta1");
  c.beta2 = meta_double(file, dir, "beta2");
  c.eps = meta_double(file, dir, "eps");
  c.weight_decay = meta_double(file, dir, "weight_decay");
  return c;
}

void load_optimizer(const std::string& dir, AdamW& opt) {
  const SafetensorsFile file(need_file(dir, kOptimizerFile, " (it was saved without optimizer state)"));
  const std::int64_t begin = meta_int(file, dir, "begin"), end = meta_int(file, dir, "end");
  if (begin != opt.begin() || end != opt.end())
    throw UsageError(who(dir) + ": the optimizer state covers parameters [" + std::to_string(begin) + ", " +
                     std::to_string(end) + "), this optimizer covers [" + std::to_string(opt.begin()) + ", " +
                     std::to_string(opt.end()) + ")");
  const bool saved_master = file.has("adamw.master");
  if (saved_master != opt.master().defined())
    throw UsageError(who(dir) + (saved_master ? ": the optimizer state has fp32 master weights but the parameters are fp32"
                                              : ": the optimizer state has no fp32 master weights but the parameters are low precision"));
  for (const SafetensorsEntry& e : file.entries())
    if (e.name != "adamw.m" && e.name != "adamw.v" && e.name != "adamw.master")
      throw UsageError(who(dir) + ": optimizer.safetensors has unexpected tensor '" + e.name + "'");
  file.read_into("adamw.m", opt.m());
  file.read_into("adamw.v", opt.v());
  if (saved_master) file.read_into("adamw.master", opt.master());
  require_finite_tensor(dir, kOptimizerFile, "adamw.m", opt.m());
  require_finite_tensor(dir, kOptimizerFile, "adamw.v", opt.v());
  if (saved_master) require_finite_tensor(dir, kOptimizerFile, "adamw.master", opt.master());
  opt.set_step_count(meta_int(file, dir, "step"));
}

namespace {
// The values a trainer state can hold (a step count, a sequence length, a batch size); anything
// else is a damaged or hand-edited file, said clearly rather than trained on.
void check_trainer_state(const std::string& dir, const TrainerState& s) {
  const std::string file = who(dir) + ": trainer_state.json: ";
  if (s.step < 0) throw UsageError(file + "step must be >= 0, got " + std::to_string(s.step));
  if (s.seq < 1) throw UsageError(file + "seq must be >= 1, got " + std::to_string(s.seq));
  if (s.global_batch < 1) throw UsageError(file + "global_batch must be >= 1, got " + std::to_string(s.global_batch));
}
}  // namespace

TrainerState load_trainer_state(const std::string& dir) {
  const JsonValue root = read_json_file(need_file(dir, kTrainerFile, " (it was saved without a trainer state)"));
  auto field = [&](const char* key) -> const JsonValue& {
    const auto it = root.find(key);
    if (it == root.end()) throw UsageError(who(dir) + ": trainer_state.json has no '" + key + "'");
    return *it;
  };
  TrainerState s;
  try {
    s.step = json_int64(field("step"));
    s.seed = json_uint64(field("seed"));
    s.data = json_string(field("data"));
    s.seq = json_int64(field("seq"));
    s.global_batch = json_int64(field("global_batch"));
    const JsonValue& losses = field("losses");
    if (!losses.is_array()) throw UsageError(std::string("losses must be an array, got ") + losses.type_name());
    for (const JsonValue& l : losses) s.losses.push_back(l.is_null() ? NAN : json_double(l));
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    if (msg.rfind(who(dir), 0) == 0) throw;
    throw UsageError(who(dir) + ": trainer_state.json: " + msg);
  }
  check_trainer_state(dir, s);
  return s;
}

std::unique_ptr<ParamStore> load_params_f32(const std::string& dir, const ModelConfig& config) {
  const DType dtype = load_dtype(dir);
  auto params = std::make_unique<ParamStore>(config, DType::f32, Device::cpu(), /*with_grads=*/false);
  if (dtype == DType::f32) {
    load_params(dir, *params);
    return params;
  }
  ParamStore narrow(config, dtype, Device::cpu(), /*with_grads=*/false);
  load_params(dir, narrow);
  convert_to_float(dtype, narrow.flat().raw(), params->flat().data<float>(), static_cast<std::size_t>(narrow.numel()));
  return params;
}

}  // namespace usp
