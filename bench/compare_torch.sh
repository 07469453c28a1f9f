#!/usr/bin/env bash
# compare_torch.sh: training throughput of the course's model against PyTorch, same model,
# batch, optimizer and thread count.
#   CPU (default): fp32, against eager PyTorch, at two sizes:
#     default    usp-small: L=4 h=256 a=8 g=4 f=768, seq 128, batch 8   (the chapters' default)
#     hidden512  usp-base-like: L=4 h=512 a=8 g=4 f=1536, seq 128, batch 8
#   GPU (-d cuda): bf16 with fp32 master weights, against eager PyTorch and torch.compile, at
#     124m       L=12 h=768 a=12 g=12 f=3072 v=32000, seq 1024, batch 8   (GPT-2 small's size)
#     1b         L=16 h=2048 a=32 g=8 f=8192 v=32000, seq 2048, batch 2   (Llama-3.2-1B-like)
#     and the MFU of each over the peak rate given with -k (default 989 TFLOP/s: an H100 SXM's
#     dense bf16).
# Prints tokens/s and the ratios ours/torch (on the CPU by wall clock and by process CPU time).
# Each side runs ROUNDS times, alternating with the others, and its best round counts: other
# jobs on a shared machine only ever slow a run down.
#
#   bench/compare_torch.sh [-d cpu|cuda] [-t THREADS] [-s STEPS] [-w WARMUP] [-r ROUNDS] [-k PEAK] [-b BUILD_DIR]
#
# THREADS (default 1) goes to OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and torch.set_num_threads.
# Python: the first with torch of USP_TORCH_PYTHON, python3 on PATH, /usr/bin/python3 (tools/torch_python.sh).
# The C++ side is BUILD_DIR/bin/bench_train_throughput (default build/); build it first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

device=cpu threads=1 steps=10 warmup=2 rounds=3 peak=989 build="$ROOT/build"
while getopts "d:t:s:w:r:k:b:h" opt; do
  case "$opt" in
    d) device="$OPTARG" ;;
    t) threads="$OPTARG" ;;
    s) steps="$OPTARG" ;;
    w) warmup="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    k) peak="$OPTARG" ;;
    b) build="$OPTARG" ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
[[ "$device" == cpu || "$device" == cuda ]] || { echo "compare_torch: -d must be cpu or cuda, got '$device'" >&2; exit 2; }
ours="$build/bin/bench_train_throughput"
[[ -x "$ours" ]] || { echo "compare_torch: $ours is not built (cmake --build $build --target bench_train_throughput)" >&2; exit 1; }
python="$("$ROOT/tools/torch_python.sh" -v)" ||
  { echo "compare_torch: $python cannot import torch; run ./usp setup or set USP_TORCH_PYTHON" >&2; exit 1; }

export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"

# rates CMD...: runs a benchmark, echoes its output to stderr, prints "WALL CPU MFU".
rates() {
  local out
  out="$("$@")" || { echo "compare_torch: failed: $*" >&2; exit 1; }
  sed 's/^/    /' <<<"$out" >&2
  local mfu
  mfu="$(sed -n 's/^mfu //p' <<<"$out" | tail -n1)"
  echo "$(sed -n 's/^tokens_per_second //p' <<<"$out" | tail -n1) $(sed -n 's/^cpu_tokens_per_second //p' <<<"$out" | tail -n1) ${mfu:-0}"
}
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

if [[ "$device" == cpu ]]; then
  names=(default hidden512)
  declare -A sizes=(
    [default]="--layers 4 --hidden 256 --heads 8 --kv-heads 4 --ffn 768 --seq 128 --batch 8"
    [hidden512]="--layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1536 --seq 128 --batch 8"
  )
  common=()
  sides=(ours eager)
else
  names=(124m 1b)
  declare -A sizes=(
    [124m]="--layers 12 --hidden 768 --heads 12 --kv-heads 12 --ffn 3072 --vocab 32000 --seq 1024 --batch 8"
    [1b]="--layers 16 --hidden 2048 --heads 32 --kv-heads 8 --ffn 8192 --vocab 32000 --seq 2048 --batch 2"
  )
  common=(--device cuda --precision bf16 --peak-tflops "$peak")
  sides=(ours eager compiled)
fi

# side_cmd SIDE: the command line of one implementation (without the size flags).
side_cmd() {
  case "$1" in
    ours) echo "$ours" ;;
    eager) echo "$python $ROOT/bench/train_throughput_torch.py --threads $threads" ;;
    compiled) echo "$python $ROOT/bench/train_throughput_torch.py --threads $threads --compile" ;;
  esac
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown), $(nproc) cores, $device" >&2
results=()
for name in "${names[@]}"; do
  read -r -a flags <<<"${sizes[$name]}"
  declare -A wall=() cpu=() mfu=()
  for side in "${sides[@]}"; do wall[$side]=0 cpu[$side]=0 mfu[$side]=0; done
  for ((round = 1; round <= rounds; ++round)); do
    for side in "${sides[@]}"; do
      echo "== $name, round $round/$rounds, $side: ${sizes[$name]}, $warmup warmup + $steps timed steps" >&2
      read -r -a cmd <<<"$(side_cmd "$side")"
      read -r w c m <<<"$(rates "${cmd[@]}" "${flags[@]}" "${common[@]}" --steps "$steps" --warmup "$warmup")"
      wall[$side]="$(max "${wall[$side]}" "$w")" cpu[$side]="$(max "${cpu[$side]}" "$c")" mfu[$side]="$(max "${mfu[$side]}" "$m")"
    done
  done
  if [[ "$device" == cpu ]]; then
    results+=("$(awk -v n="$name" -v a="${wall[ours]}" -v b="${wall[eager]}" -v c="${cpu[ours]}" -v d="${cpu[eager]}" \
                   'BEGIN { printf "%-10s %11.1f %11.1f %9.2fx   %11.1f %11.1f %9.2fx", n, a, b, a / b, c, d, c / d }')")
  else
    results+=("$(awk -v n="$name" -v a="${wall[ours]}" -v b="${wall[eager]}" -v c="${wall[compiled]}" \
                   -v ma="${mfu[ours]}" -v mb="${mfu[eager]}" -v mc="${mfu[compiled]}" \
                   'BEGIN { printf "%-6s %11.0f %11.0f %11.0f %8.2fx %8.2fx   %5.1f%% %5.1f%% %5.1f%%", n, a, b, c, a / b, a / c, 100 * ma, 100 * mb, 100 * mc }')")
  fi
  unset wall cpu mfu
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
if [[ "$device" == cpu ]]; then
  echo "tokens/s, $threads thread(s), best of $rounds rounds:"
  printf '%-10s %11s %11s %10s   %11s %11s %10s\n' "" "ours wall" "torch wall" "ours/torch" "ours cpu" "torch cpu" "ours/torch"
else
  echo "tokens/s on $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 || echo the GPU), bf16, best of $rounds rounds; MFU over $peak TFLOP/s:"
  printf '%-6s %11s %11s %11s %9s %9s   %6s %6s %6s\n' "" "ours" "eager" "compiled" "/eager" "/compiled" "ours" "eager" "comp."
fi
printf '%s\n' "${results[@]}"
