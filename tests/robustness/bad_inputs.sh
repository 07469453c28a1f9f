#!/usr/bin/env bash
# bad_inputs.sh TABLE BIN_DIR [MPIEXEC...]
# Runs every case of TABLE (bad_inputs.table: "ranks | exit | message | command") and checks
# that each one exits with the expected status within 10 s and prints exactly one
# "error:"/"fatal:" line (with or without a "[rank r] " prefix), which contains the message.
#
# In a command, "@name" is the executable BIN_DIR/name, started under MPIEXEC -np RANKS when
# RANKS > 0 (and MPIEXEC is given), directly when RANKS is 0; $FIX is a scratch directory with
# the fixtures made below. Commands run under bash in $FIX, so "ulimit -f 1; @..." and relative
# paths work (the core's writers ignore SIGXFSZ: past the limit a write fails with EFBIG, as on
# a full disk, and the program must say so).
# With BAD_INPUTS_SHARD=i/n in the environment only cases i, i+n, i+2n, ... (counting from 0) run,
# so that ctest can run the table as n entries in parallel.
# Prints one line per case and a summary; exits 1 if any case failed.
set -u
table=$(realpath "$1"); bin=$(realpath "$2"); shift 2
mpiexec=("$@")
limit=$((10 * ${USP_TIMEOUT_SCALE:-1}))  # seconds per row (x4 under the sanitizers)
shard=0; shards=1
if [ -n "${BAD_INPUTS_SHARD:-}" ]; then shard=${BAD_INPUTS_SHARD%/*}; shards=${BAD_INPUTS_SHARD#*/}; fi

FIX=$(mktemp -d "${TMPDIR:-/tmp}/usp_bad_inputs.XXXXXX")
trap 'rm -rf "$FIX"' EXIT
export FIX

# ---- fixtures ----------------------------------------------------------------------------------
echo "not a directory" > "$FIX/a_file"
ln -s /dev/full "$FIX/full.csv"
printf 'hello\n' > "$FIX/short.txt"
head -c 1000 "$(dirname "$0")/../../README.md" > "$FIX/lessons_head.txt"  # held out: its last 100 bytes
llama_config() {  # llama_config DIR VOCAB: a usp-tiny config.json with the given vocab_size
  mkdir -p "$1"
  cat > "$1/config.json" <<EOF
{"model_type": "llama", "hidden_act": "silu", "vocab_size": $2, "hidden_size": 64,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "intermediate_size": 192, "max_position_embeddings": 4096, "torch_dtype": "float32"}
EOF
}
llama_config "$FIX/huge_vocab" 1000000000000000
llama_config "$FIX/no_weights" 256
mkdir -p "$FIX/broken_json" && printf '{"vocab_size": ' > "$FIX/broken_json/config.json"
mixtral_config() {  # mixtral_config DIR CAPACITY_FACTOR: a 4-expert config.json with usp_capacity_factor
  mkdir -p "$1"
  cat > "$1/config.json" <<EOF
{"model_type": "mixtral", "hidden_act": "silu", "vocab_size": 256, "hidden_size": 64,
 "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "intermediate_size": 192, "max_position_embeddings": 4096, "torch_dtype": "float32",
 "num_local_experts": 4, "num_experts_per_tok": 2, "usp_capacity_factor": $2}
EOF
}
mixtral_config "$FIX/huge_capacity" 1e300
mkdir -p "$FIX/config_is_dir/config.json"
mkdir -p "$FIX/config_is_fifo" && mkfifo "$FIX/config_is_fifo/config.json"
cluster() {  # cluster FILE GPUS_PER_NODE MEMORY_GB NODES ALL_REDUCE: a cluster file for usp_plan --cluster
  cat > "$1" <<EOF
{"name": "test", "gpus_per_node": $2, "peak_tflops": 989.5, "memory_gb": $3,
 "bus_bandwidth_gbps": {"nodes": $4, "all_reduce": $5, "all_gather": [250, 100], "reduce_scatter": [250, 100]}}
EOF
}
cluster "$FIX/negative_bandwidth.json" 8 80 "[1, 2]" "[436, -100]"
cluster "$FIX/huge_gpus.json" 4294967304 80 "[1, 2]" "[436, 100]"
cluster "$FIX/huge_memory.json" 8 1e308 "[1, 2]" "[436, 100]"
cluster "$FIX/unsorted_nodes.json" 8 80 "[2, 1]" "[436, 100]"
cluster "$FIX/negative_hbm.json" 8 '80, "hbm_tbps": -3.35' "[1, 2]" "[436, 100]"  # memory_gb, then the HBM bandwidth
touch "$FIX/a_save_file"
# A one-layer checkpoint (hidden 2, vocab 2) whose q_proj holds a NaN: every weight 0.5, one NaN.
nan_weight_checkpoint() {
  local dir=$1 L=model.layers.0. header="" off=0 name shape n
  mkdir -p "$dir"
  cat > "$dir/config.json" <<EOF
{"model_type": "llama", "hidden_act": "silu", "vocab_size": 2, "hidden_size": 2,
 "num_hidden_layers": 1, "num_attention_heads": 1, "num_key_value_heads": 1,
 "intermediate_size": 1, "max_position_embeddings": 64, "torch_dtype": "float32"}
EOF
  : > "$dir/data.bin"
  for entry in model.embed_tokens.weight:2,2:4 ${L}input_layernorm.weight:2:2 ${L}self_attn.q_proj.weight:2,2:4 \
               ${L}self_attn.k_proj.weight:2,2:4 ${L}self_attn.v_proj.weight:2,2:4 ${L}self_attn.o_proj.weight:2,2:4 \
               ${L}post_attention_layernorm.weight:2:2 ${L}mlp.gate_proj.weight:1,2:2 ${L}mlp.up_proj.weight:1,2:2 \
               ${L}mlp.down_proj.weight:2,1:2 model.norm.weight:2:2 lm_head.weight:2,2:4; do
    IFS=: read -r name shape n <<< "$entry"
    for ((k = 0; k < n; k++)); do
      if [ "$name" = "${L}self_attn.q_proj.weight" ] && [ $k -eq 1 ]; then printf '\x00\x00\xc0\x7f'; else printf '\x00\x00\x00\x3f'; fi
    done >> "$dir/data.bin"
    header+="${header:+, }\"$name\": {\"dtype\": \"F32\", \"shape\": [$shape], \"data_offsets\": [$off, $((off + 4 * n))]}"
    off=$((off + 4 * n))
  done
  header="{$header}"
  while [ $((${#header} % 8)) -ne 0 ]; do header+=" "; done
  local len=${#header}
  { printf "$(printf '\\x%02x' $((len & 255)) $(((len >> 8) & 255)))\x00\x00\x00\x00\x00\x00"; printf '%s' "$header"; cat "$dir/data.bin"; } > "$dir/model.safetensors"
  rm "$dir/data.bin"
}
nan_weight_checkpoint "$FIX/nan_weight"
mkdir -p "$FIX/negative_step"
cat > "$FIX/negative_step/trainer_state.json" <<EOF
{"step": -3, "seed": 1234, "data": "synthetic", "seq": 128, "global_batch": 4, "losses": []}
EOF

# ---- cases -------------------------------------------------------------------------------------
trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }

passed=0; failed=0; n=0
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in '#'* | '') continue ;; esac
  IFS='|' read -r ranks want message command <<< "$line"
  ranks=$(trim "$ranks"); want=$(trim "$want"); message=$(trim "$message"); command=$(trim "$command")
  n=$((n + 1))
  if [ $(((n - 1) % shards)) -ne "$shard" ]; then n_skipped=$((${n_skipped:-0} + 1)); continue; fi
  launch="$bin/"
  if [ "$ranks" -gt 0 ] && [ ${#mpiexec[@]} -gt 0 ]; then launch="${mpiexec[*]} -np $ranks --oversubscribe $bin/"; fi
  script=${command//@/$launch}
  start=$(date +%s%N)
  out=$(cd "$FIX" && timeout --kill-after=3 "$limit" bash -c "$script" 2>&1 < /dev/null); rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  lines=$(printf '%s\n' "$out" | grep -E '(^|\] )(error|fatal): ')
  count=$(printf '%s' "$lines" | grep -c '' || true)
  why=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then why="hung (no exit within ${limit}s)"
  elif [ "$rc" -ne "$want" ]; then why="exit $rc, expected $want"
  elif [ "$count" -ne 1 ]; then why="$count error:/fatal: lines, expected exactly one"
  elif ! printf '%s' "$lines" | grep -qF -- "$message"; then why="the error line lacks '$message'"
  fi
  if [ -z "$why" ]; then
    passed=$((passed + 1)); printf 'ok    %6d ms  %s\n' "$ms" "$command"
  else
    failed=$((failed + 1)); printf 'FAIL  %6d ms  %s\n      %s\n' "$ms" "$command" "$why"
    printf '%s\n' "$out" | tail -n 8 | sed 's/^/      | /'
  fi
done < "$table"

ran=$((n - ${n_skipped:-0}))
echo "bad inputs: $passed of $ran cases passed (shard $shard of $shards; $n cases in the table)"
[ "$failed" -eq 0 ] && [ "$ran" -gt 0 ]
