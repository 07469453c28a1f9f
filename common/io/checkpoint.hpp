// Checkpoints: a directory that Hugging Face's transformers loads as it is
// (LlamaForCausalLM.from_pretrained(dir)), plus what a training run needs to resume bit-exactly.
//
//   dir/model.safetensors    every parameter under its HF name (ParamStore::infos() order and
//                            names; HF Linear weights are [out, in], which is our layout too),
//                            in the parameters' dtype (F32 or BF16); metadata {"format": "pt"},
//                            which transformers checks for.
//   dir/config.json          a LlamaConfig: architectures ["LlamaForCausalLM"], model_type
//                            "llama", the shape (hidden_size, intermediate_size,
//                            num_attention_heads, num_hidden_layers, num_key_value_heads,
//                            head_dim, vocab_size, max_position_embeddings), rms_norm_eps,
//                            rope_theta, rope_scaling null, tie_word_embeddings, hidden_act
//                            "silu", no biases, torch_dtype, initializer_range, ...
//                            plus "usp_model" (the course's name for the shape).
//   dir/optimizer.safetensors   (training state) AdamW's m, v and, for low-precision
//                            parameters, the fp32 master weights, as flat [end - begin] F32
//                            tensors "adamw.m", "adamw.v", "adamw.master"; the step count,
//                            range and hyperparameters in the metadata.
//   dir/trainer_state.json   (training state) steps done, seed, data spec, seq, global batch
//                            and the losses so far: with the data rule (docs/ARCHITECTURE.md,
//                            principle 1: sample i of step s is a pure function of (seed, s, i))
//                            that is all a resumed run needs to continue exactly where the saved
//                            one was.
//
// Multi-rank runs: these functions read and write files and know nothing of ranks. Only rank 0
// should call save_checkpoint, after a barrier if others will read the files, and only with
// unsharded state: parameters gathered first under TP/PP/ZeRO-3, and an AdamW covering every
// parameter (a ZeRO-1/2 shard's AdamW covers [begin, end) and its state is saved as such; it
// can only be loaded into an AdamW over the same range). Every rank may load.
//
// Errors: a missing directory or file, a config transformers would load differently than we
// would (rope_scaling, biases, another head_dim), a shape, name or dtype mismatch, a corrupt
// file: usp::UsageError with the directory and the problem, e.g.
//   checkpoint 'ckpt' has no config.json
//   checkpoint 'ckpt': model.safetensors has no tensor 'model.norm.weight'
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/model/config.hpp"
#include "common/model/params.hpp"
#include "common/optim/adamw.hpp"

namespace usp {

// Where a training run stands after `step` optimizer steps.
struct TrainerState {
  std::int64_t step = 0;           // steps done; the next step to run has index `step`
  std::uint64_t seed = 0;          // the run's seed (initialisation and data)
  std::string data = "synthetic";  // make_dataset() spec
  std::int64_t seq = 0;            // tokens per sample
  std::int64_t global_batch = 0;   // samples per optimizer step, over all ranks and micro-batches
  std::vector<double> losses;      // the loss of each step done (round-trips exactly)
};

// Writes the files above into dir (created if needed). opt and state are optional; when one is
// null, a stale optimizer.safetensors / trainer_state.json left in dir by an earlier save is
// removed, so the directory never mixes two runs. Rank 0 only in multi-rank runs (see above).
void save_checkpoint(const std::string& dir, const ParamStore& params, const AdamW* opt = nullptr,
                     const TrainerState* state = nullptr);

// config.json -> ModelConfig. Accepts any LlamaConfig this model computes the same way:
// model_type "llama", hidden_act "silu", no rope_scaling, no biases, head_dim equal to
// hidden_size / num_attention_heads; defaults as transformers' LlamaConfig for absent keys.
ModelConfig load_config(const std::string& dir);
// The parameters' dtype: config.json's torch_dtype ("float32", "bfloat16", "float16").
DType load_dtype(const std::string& dir);
// Reads model.safetensors into params: config.json must describe params' shape, and the file
// must hold exactly params' tensors, with their shapes and dtype.
void load_params(const std::string& dir, ParamStore& params);
// The checkpoint's parameters in fp32 on the CPU (bf16/f16 ones widened, exactly), in a store of
// `config`: load_config(dir), or a copy with run-time settings changed (a MoE model made
// dropless for generation); its shape must be the checkpoint's (load_params' checks).
std::unique_ptr<ParamStore> load_params_f32(const std::string& dir, const ModelConfig& config);

bool has_optimizer_state(const std::string& dir);  // optimizer.safetensors exists
// The hyperparameters saved with the optimizer state (to construct the AdamW to load into).
AdamWConfig load_optimizer_config(const std::string& dir);
// m, v, master and the step count; opt must cover the same [begin, end) range and have a
// master copy exactly when the saved one had. Hyperparameters are not checked (a resumed run
// may change its learning rate).
void load_optimizer(const std::string& dir, AdamW& opt);

TrainerState load_trainer_state(const std::string& dir);

// The config.json text for a config and parameter dtype (what save_checkpoint writes).
std::string hf_config_json(const ModelConfig& config, DType dtype);

}  // namespace usp
