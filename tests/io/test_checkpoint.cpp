// Checkpoints: parameters round-trip bit for bit (fp32 and bf16, tied and untied), config.json
// carries the Hugging Face LlamaConfig keys with the right values (and an HF-written config
// loads), optimizer and trainer state round-trip, and every broken checkpoint gets a clear
// message naming the directory.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "common/io/checkpoint.hpp"
#include "common/io/json_value.hpp"
#include "common/io/safetensors.hpp"
#include "tests/io/io_fixtures.hpp"

using namespace usp;
using usp::testing::read_file;
using usp::testing::TempDir;
using usp::testing::write_file;

namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

ModelConfig tiny(bool tied = false) {
  ModelConfig c = ModelConfig::builtin("usp-tiny");
  c.tied_embeddings = tied;
  return c;
}

// Fills a store's gradients with fixed values (no model needed to exercise the optimizer).
void fake_grads(ParamStore& p, float scale) {
  Tensor g = Tensor::empty({p.numel()}, DType::f32);
  for (std::int64_t i = 0; i < p.numel(); ++i) g.data<float>()[i] = scale * static_cast<float>((i % 13) - 6);
  if (p.dtype() == DType::f32) {
    p.flat_grad().copy_from(g);
  } else {
    convert_from_float(g.data<float>(), p.dtype(), p.flat_grad().raw(), static_cast<std::size_t>(p.numel()));
  }
}

}  // namespace

TEST_CASE("checkpoint round trip: parameters bit-identical, config fields restored", "[io][checkpoint]") {
  TempDir dir("ckpt_round");
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (bool tied : {false, true}) {
      INFO(dtype_name(dtype) << (tied ? " tied" : " untied"));
      ModelConfig c = tiny(tied);
      c.rope_theta = 500000.0;
      c.norm_eps = 1e-6;
      c.init_std = 0.05;
      c.max_seq = 1024;
      ParamStore saved(c, dtype);
      saved.init(31);
      const std::string d = dir / (std::string(dtype_name(dtype)) + (tied ? "_tied" : ""));
      save_checkpoint(d, saved);
      CHECK(std::filesystem::exists(d + "/model.safetensors"));
      CHECK(std::filesystem::exists(d + "/config.json"));
      CHECK_FALSE(std::filesystem::exists(d + "/optimizer.safetensors"));
      CHECK_FALSE(std::filesystem::exists(d + "/trainer_state.json"));

      const ModelConfig back = load_config(d);
      CHECK(back.name == "usp-tiny");
      CHECK(back.vocab == c.vocab);
      CHECK(back.hidden == c.hidden);
      CHECK(back.layers == c.layers);
      CHECK(back.heads == c.heads);
      CHECK(back.kv_heads == c.kv_heads);
      CHECK(back.ffn == c.ffn);
      CHECK(back.max_seq == 1024);
      CHECK(back.rope_theta == 500000.0);
      CHECK(back.norm_eps == 1e-6);
      CHECK(back.init_std == 0.05);
      CHECK(back.tied_embeddings == tied);
      CHECK(load_dtype(d) == dtype);

      ParamStore loaded(back, load_dtype(d), Device::cpu(), /*with_grads=*/false);
      load_params(d, loaded);
      CHECK(same_bytes(loaded.flat(), saved.flat()));
    }
  }
}

TEST_CASE("model.safetensors holds every parameter under its HF name, in order", "[io][checkpoint]") {
  TempDir dir("ckpt_names");
  ParamStore p(tiny(), DType::bf16);
  p.init(2);
  save_checkpoint(dir.str(), p);
  const SafetensorsFile f(dir / "model.safetensors");
  CHECK(f.metadata().at("format") == "pt");  // transformers refuses files without it
  REQUIRE(f.entries().size() == p.infos().size());
  for (std::size_t i = 0; i < p.infos().size(); ++i) {
    CHECK(f.entries()[i].name == p.infos()[i].name);
    CHECK(f.entries()[i].shape == p.infos()[i].shape);
    CHECK(f.entries()[i].dtype == DType::bf16);
  }
  CHECK(f.entries().front().name == "model.embed_tokens.weight");
  CHECK(f.entry("model.layers.1.self_attn.k_proj.weight").shape == Shape{32, 64});  // [kv_heads·d, h]
  CHECK(f.entry("model.layers.0.mlp.down_proj.weight").shape == Shape{64, 192});   // [h, f]
  CHECK(f.entries().back().name == "lm_head.weight");
}

TEST_CASE("config.json is a LlamaConfig with the HF keys and values", "[io][checkpoint]") {
  TempDir dir("ckpt_config");
  ParamStore p(tiny(), DType::f32, Device::cpu(), false);
  save_checkpoint(dir.str(), p);
  const JsonValue c = read_json_file(dir / "config.json");
  REQUIRE(c.at("architectures").size() == 1);
  CHECK(c.at("architectures")[0].get<std::string>() == "LlamaForCausalLM");
  CHECK(c.at("model_type").get<std::string>() == "llama");
  CHECK(json_int64(c.at("hidden_size")) == 64);
  CHECK(json_int64(c.at("intermediate_size")) == 192);
  CHECK(json_int64(c.at("num_attention_heads")) == 4);
  CHECK(json_int64(c.at("num_hidden_layers")) == 2);
  CHECK(json_int64(c.at("num_key_value_heads")) == 2);
  CHECK(json_int64(c.at("head_dim")) == 16);
  CHECK(json_int64(c.at("vocab_size")) == 256);
  CHECK(json_int64(c.at("max_position_embeddings")) == 4096);
  CHECK(json_double(c.at("rms_norm_eps")) == 1e-5);
  CHECK(json_double(c.at("rope_theta")) == 10000.0);
  CHECK(c.at("rope_scaling").is_null());
  CHECK(c.at("tie_word_embeddings").get<bool>() == false);
  CHECK(c.at("hidden_act").get<std::string>() == "silu");
  CHECK(c.at("attention_bias").get<bool>() == false);
  CHECK(c.at("mlp_bias").get<bool>() == false);
  CHECK(json_double(c.at("attention_dropout")) == 0.0);
  CHECK(json_double(c.at("initializer_range")) == 0.02);
  CHECK(c.at("torch_dtype").get<std::string>() == "float32");
  CHECK(c.at("bos_token_id").is_null());
  CHECK(c.at("eos_token_id").is_null());
  CHECK(json_int64(c.at("pretraining_tp")) == 1);
  CHECK(c.at("use_cache").get<bool>() == true);
  CHECK(hf_config_json(tiny(), DType::bf16).find("\"torch_dtype\": \"bfloat16\"") != std::string::npos);
  // Shortest round-trip text, floats always with a '.' or an exponent, so Python reads floats.
  const std::string text = hf_config_json(tiny(), DType::f32);
  CHECK(text.find("\"rms_norm_eps\": 1e-05,") != std::string::npos);
  CHECK(text.find("\"rope_theta\": 10000.0,") != std::string::npos);
  CHECK(text.find("\"attention_dropout\": 0.0,") != std::string::npos);
  CHECK(text.find("\"initializer_range\": 0.02,") != std::string::npos);
}

TEST_CASE("a config.json written by transformers loads", "[io][checkpoint]") {
  TempDir dir("ckpt_hf_config");
  // TinyLlama-1.1B's config.json as transformers 4.35 wrote it (keys sorted, no head_dim).
  write_file(dir / "config.json", R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 5632,
  "max_position_embeddings": 2048, "model_type": "llama", "num_attention_heads": 32,
  "num_hidden_layers": 22, "num_key_value_heads": 4, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": null, "rope_theta": 10000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.35.0", "use_cache": true, "vocab_size": 32000
})");
  const ModelConfig c = load_config(dir.str());
  CHECK(c.hidden == 2048);
  CHECK(c.ffn == 5632);
  CHECK(c.heads == 32);
  CHECK(c.kv_heads == 4);
  CHECK(c.layers == 22);
  CHECK(c.vocab == 32000);
  CHECK(c.max_seq == 2048);
  CHECK(c.norm_eps == 1e-5);
  CHECK(c.rope_theta == 10000.0);
  CHECK_FALSE(c.tied_embeddings);
  CHECK(load_dtype(dir.str()) == DType::bf16);
  // The minimal config: absent keys take transformers' LlamaConfig defaults.
  write_file(dir / "config.json",
             R"({"hidden_size": 32, "intermediate_size": 40, "num_attention_heads": 4, "num_hidden_layers": 1,
                 "vocab_size": 10})");
  const ModelConfig m = load_config(dir.str());
  CHECK(m.kv_heads == 4);
  CHECK(m.max_seq == 2048);
  CHECK(m.norm_eps == 1e-6);
  CHECK(m.rope_theta == 10000.0);
  CHECK(load_dtype(dir.str()) == DType::f32);
}

TEST_CASE("optimizer and trainer state round-trip exactly", "[io][checkpoint]") {
  TempDir dir("ckpt_opt");
  for (DType dtype : {DType::f32, DType::bf16}) {
    INFO(dtype_name(dtype));
    ParamStore p(tiny(), dtype);
    p.init(4);
    AdamWConfig cfg;
    cfg.lr = 1e-3;
    cfg.beta2 = 0.999;
    cfg.weight_decay = 0.01;
    AdamW opt(p, cfg);
    for (int s = 0; s < 3; ++s) {
      fake_grads(p, 0.01f * static_cast<float>(s + 1));
      opt.step(p);
    }
    TrainerState st;
    st.step = 3;
    st.seed = std::numeric_limits<std::uint64_t>::max();  // exact beyond 2^53
    st.data = "text:some file.txt";
    st.seq = 128;
    st.global_batch = 32;
    st.losses = {5.545177444479562, 1.0 / 3.0, 1e-300, 4.9406564584124654e-324};
    const std::string d = dir / dtype_name(dtype);
    save_checkpoint(d, p, &opt, &st);
    REQUIRE(has_optimizer_state(d));

    const AdamWConfig c = load_optimizer_config(d);
    CHECK(c.lr == cfg.lr);
    CHECK(c.beta1 == cfg.beta1);
    CHECK(c.beta2 == cfg.beta2);
    CHECK(c.eps == cfg.eps);
    CHECK(c.weight_decay == cfg.weight_decay);
    ParamStore q(load_config(d), load_dtype(d));
    load_params(d, q);
    AdamW back(q, c);
    load_optimizer(d, back);
    CHECK(back.step_count() == 3);
    CHECK(same_bytes(back.m(), opt.m()));
    CHECK(same_bytes(back.v(), opt.v()));
    CHECK(back.master().defined() == (dtype == DType::bf16));
    if (dtype == DType::bf16) CHECK(same_bytes(back.master(), opt.master()));

    const TrainerState t = load_trainer_state(d);
    CHECK(t.step == 3);
    CHECK(t.seed == st.seed);
    CHECK(t.data == st.data);
    CHECK(t.seq == 128);
    CHECK(t.global_batch == 32);
    REQUIRE(t.losses.size() == st.losses.size());
    for (std::size_t i = 0; i < t.losses.size(); ++i)
      CHECK(std::memcmp(&t.losses[i], &st.losses[i], sizeof(double)) == 0);  // bit for bit

    // Saving again without optimizer and trainer state removes the stale files.
    save_checkpoint(d, p);
    CHECK_FALSE(has_optimizer_state(d));
    CHECK_FALSE(std::filesystem::exists(d + "/trainer_state.json"));
    CHECK_THROWS_WITH(load_optimizer(d, back),
                      "checkpoint '" + d + "' has no optimizer.safetensors (it was saved without optimizer state)");
    CHECK_THROWS_WITH(load_trainer_state(d),
                      "checkpoint '" + d + "' has no trainer_state.json (it was saved without a trainer state)");
  }
}

TEST_CASE("optimizer state only loads into an optimizer of the same range and precision", "[io][checkpoint]") {
  TempDir dir("ckpt_opt_mismatch");
  ParamStore p(tiny(), DType::f32);
  AdamW opt(p, {});
  save_checkpoint(dir.str(), p, &opt);
  AdamW shard(p, {}, 0, 100);
  CHECK_THROWS_WITH(load_optimizer(dir.str(), shard),
                    Catch::Contains("the optimizer state covers parameters [0, " + std::to_string(p.numel()) +
                                    "), this optimizer covers [0, 100)"));
  ParamStore narrow(tiny(), DType::bf16);
  AdamW mixed(narrow, {});
  CHECK_THROWS_WITH(load_optimizer(dir.str(), mixed), Catch::Contains("has no fp32 master weights"));
}

TEST_CASE("broken checkpoints give one clear message naming the directory", "[io][checkpoint]") {
  TempDir dir("ckpt_broken");
  const std::string d = dir / "ck";
  const std::string me = "checkpoint '" + d + "'";
  ParamStore p(tiny(), DType::f32, Device::cpu(), false);
  p.init(1);
  ParamStore target(tiny(), DType::f32, Device::cpu(), false);

  // Missing directory and files.
  CHECK_THROWS_AS(load_config(d), UsageError);
  CHECK_THROWS_WITH(load_config(d), me + " not found (no such directory)");
  std::filesystem::create_directories(d);
  CHECK_THROWS_WITH(load_config(d), me + " has no config.json");
  CHECK_THROWS_WITH(load_params(d, target), me + " has no config.json");
  save_checkpoint(d, p);
  std::filesystem::remove(d + "/model.safetensors");
  CHECK_THROWS_WITH(load_params(d, target), me + " has no model.safetensors");

  // A config that does not match the model it is loaded into.
  save_checkpoint(d, p);
  ModelConfig wider = tiny();
  wider.hidden = 128;
  ParamStore other(wider, DType::f32, Device::cpu(), false);
  CHECK_THROWS_WITH(load_params(d, other), me + ": config.json has hidden_size = 64, the model has 128");
  ParamStore narrow(tiny(), DType::bf16, Device::cpu(), false);
  write_file(d + "/config.json", hf_config_json(tiny(), DType::bf16));  // config agrees, the file does not
  CHECK_THROWS_WITH(load_params(d, narrow),
                    me + ": model.safetensors holds 'model.embed_tokens.weight' as F32, the model's parameters are BF16");

  // A tensor missing, one too many, one of the wrong shape.
  save_checkpoint(d, p);
  std::vector<NamedTensor> all;
  for (std::size_t i = 0; i < p.infos().size(); ++i) all.push_back({p.infos()[i].name, p.param(static_cast<int>(i))});
  std::vector<NamedTensor> fewer(all.begin(), all.end());
  fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(p.index("model.norm.weight")));
  write_safetensors(d + "/model.safetensors", fewer);
  CHECK_THROWS_WITH(load_params(d, target), me + ": model.safetensors has no tensor 'model.norm.weight'");
  std::vector<NamedTensor> more = all;
  more.push_back({"model.layers.0.self_attn.q_proj.bias", Tensor::zeros({64})});
  write_safetensors(d + "/model.safetensors", more);
  CHECK_THROWS_WITH(load_params(d, target),
                    Catch::StartsWith(me + ": model.safetensors has unexpected tensor 'model.layers.0.self_attn.q_proj.bias'"));
  std::vector<NamedTensor> reshaped = all;
  reshaped[0].tensor = reshaped[0].tensor.reshape({64, 256});
  write_safetensors(d + "/model.safetensors", reshaped);
  CHECK_THROWS_WITH(load_params(d, target),
                    me + ": model.safetensors holds 'model.embed_tokens.weight' as [64, 256], the model expects [256, 64]");

  // A truncated weights file (a crash while copying it, say).
  save_checkpoint(d, p);
  const std::string bytes = read_file(d + "/model.safetensors");
  write_file(d + "/model.safetensors", bytes.substr(0, bytes.size() - 100));
  CHECK_THROWS_WITH(load_params(d, target), Catch::Contains("safetensors file '" + d + "/model.safetensors' is truncated"));

  // config.json problems: not JSON, a missing key, a setting the model cannot honour.
  save_checkpoint(d, p);
  const std::string good = hf_config_json(tiny(), DType::f32);
  write_file(d + "/config.json", "{\"hidden_size\": 64,");
  CHECK_THROWS_WITH(load_config(d), Catch::StartsWith(d + "/config.json: JSON error at line 1, column 20: syntax error while parsing object key - unexpected end of input"));
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    write_file(d + "/config.json", text.replace(at, from.size(), to));
  };
  with("\"hidden_size\": 64,", "");
  CHECK_THROWS_WITH(load_config(d), me + ": config.json has no hidden_size");
  with("\"hidden_size\": 64", "\"hidden_size\": 64.5");
  CHECK_THROWS_WITH(load_config(d), me + ": config.json: hidden_size must be an integer");
  with("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}");
  CHECK_THROWS_WITH(load_config(d), Catch::Contains("rope_scaling is set; only plain RoPE"));
  with("\"head_dim\": 16", "\"head_dim\": 32");
  CHECK_THROWS_WITH(load_config(d), me + ": config.json: head_dim 32 differs from hidden_size / num_attention_heads = 16; "
                                         "the model needs them equal");
  with("\"hidden_act\": \"silu\"", "\"hidden_act\": \"gelu\"");
  CHECK_THROWS_WITH(load_config(d), Catch::Contains("hidden_act is 'gelu', only 'silu'"));
  with("\"mlp_bias\": false", "\"mlp_bias\": true");
  CHECK_THROWS_WITH(load_config(d), Catch::Contains("mlp_bias is true"));
  with("\"model_type\": \"llama\"", "\"model_type\": \"mistral\"");
  CHECK_THROWS_WITH(load_config(d), Catch::Contains("model_type is 'mistral', only 'llama'"));
  with("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3");
  CHECK_THROWS_WITH(load_config(d), me + ": config.json: model: kv-heads (3) must divide heads (4)");
  with("\"torch_dtype\": \"float32\"", "\"torch_dtype\": \"int8\"");
  CHECK_THROWS_WITH(load_dtype(d), Catch::Contains("torch_dtype 'int8' is not supported"));
}

TEST_CASE("a mixture of experts saves as a MixtralConfig with Mixtral's tensor names and loads back", "[io][checkpoint][moe]") {
  TempDir dir("ckpt_moe");
  ModelConfig c = tiny();
  c.experts = 4;
  c.experts_per_token = 2;
  c.capacity_factor = 1.25;
  c.router_aux_loss_coef = 0.02;
  ParamStore saved(c, DType::bf16);
  saved.init(8);
  save_checkpoint(dir.str(), saved);
  const JsonValue j = read_json_file(dir / "config.json");
  CHECK(j.at("architectures")[0].get<std::string>() == "MixtralForCausalLM");
  CHECK(j.at("model_type").get<std::string>() == "mixtral");
  CHECK(json_int64(j.at("num_local_experts")) == 4);
  CHECK(json_int64(j.at("num_experts_per_tok")) == 2);
  CHECK(json_double(j.at("router_aux_loss_coef")) == 0.02);
  CHECK(json_double(j.at("usp_capacity_factor")) == 1.25);
  const SafetensorsFile f(dir / "model.safetensors");
  CHECK(f.entry("model.layers.1.block_sparse_moe.gate.weight").shape == Shape{4, 64});
  CHECK(f.entry("model.layers.0.block_sparse_moe.experts.3.w2.weight").shape == Shape{64, 192});
  const ModelConfig back = load_config(dir.str());
  CHECK(back.experts == 4);
  CHECK(back.experts_per_token == 2);
  CHECK(back.capacity_factor == 1.25);
  CHECK(back.router_aux_loss_coef == 0.02);
  ParamStore loaded(back, load_dtype(dir.str()), Device::cpu(), /*with_grads=*/false);
  load_params(dir.str(), loaded);
  CHECK(same_bytes(loaded.flat(), saved.flat()));
  // A dense model refuses the MoE checkpoint, naming the difference.
  ParamStore dense(tiny(), DType::bf16, Device::cpu(), false);
  CHECK_THROWS_WITH(load_params(dir.str(), dense), Catch::Contains("num_local_experts = 4, the model has 0"));
  // Mixtral-8x7B's config.json keys as transformers writes them (its sizes shrunk): no usp keys.
  write_file(dir / "config.json", R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 64, "initializer_range": 0.02, "intermediate_size": 112,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 4, "num_experts_per_tok": 2,
  "num_hidden_layers": 2, "num_key_value_heads": 2, "num_local_experts": 8, "output_router_logits": false,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02, "router_jitter_noise": 0.0,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "vocab_size": 256})");
  const ModelConfig mix = load_config(dir.str());
  CHECK(mix.experts == 8);
  CHECK(mix.experts_per_token == 2);
  CHECK(mix.capacity_factor == 0);  // dropless, as Mixtral routes
  CHECK(mix.ffn == 112);
}
