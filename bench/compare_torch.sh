#!/usr/bin/env bash
# compare_torch.sh: CPU training throughput of the course's model against PyTorch eager fp32,
# same model, batch, optimizer and thread count, at two sizes:
#   default   usp-small: L=4 h=256 a=8 g=4 f=768, seq 128, batch 8   (the chapters' default)
#   hidden512 usp-base-like: L=4 h=512 a=8 g=4 f=1536, seq 128, batch 8
# Prints tokens/s of each and the ratio ours/torch, by wall clock and by process CPU time.
# Each side runs ROUNDS times, alternating with the other, and its best round counts: other
# jobs on a shared machine only ever slow a run down. With one thread the CPU-time rate also
# leaves out time slices lost to other jobs; on an idle machine the two agree.
#
#   bench/compare_torch.sh [-t THREADS] [-s STEPS] [-w WARMUP] [-r ROUNDS] [-b BUILD_DIR]
#
# THREADS (default 1) goes to OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and torch.set_num_threads.
# Python: USP_TORCH_PYTHON, else /usr/bin/python3 (where ./usp setup installs python3-torch).
# The C++ side is BUILD_DIR/bin/bench_train_throughput (default build/); build it first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

threads=1 steps=10 warmup=2 rounds=3 build="$ROOT/build"
while getopts "t:s:w:r:b:h" opt; do
  case "$opt" in
    t) threads="$OPTARG" ;;
    s) steps="$OPTARG" ;;
    w) warmup="$OPTARG" ;;
    r) rounds="$OPTARG" ;;
    b) build="$OPTARG" ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
ours="$build/bin/bench_train_throughput"
python="${USP_TORCH_PYTHON:-/usr/bin/python3}"
[[ -x "$ours" ]] || { echo "compare_torch: $ours is not built (cmake --build $build --target bench_train_throughput)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "compare_torch: $python cannot import torch; run ./usp setup or set USP_TORCH_PYTHON" >&2; exit 1; }

export OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"

# rates CMD...: runs a benchmark, echoes its output to stderr, prints "WALL CPU" tokens/s.
rates() {
  local out
  out="$("$@")" || { echo "compare_torch: failed: $*" >&2; exit 1; }
  sed 's/^/    /' <<<"$out" >&2
  echo "$(sed -n 's/^tokens_per_second //p' <<<"$out" | tail -n1) $(sed -n 's/^cpu_tokens_per_second //p' <<<"$out" | tail -n1)"
}
max() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }

declare -A sizes=(
  [default]="--layers 4 --hidden 256 --heads 8 --kv-heads 4 --ffn 768 --seq 128 --batch 8"
  [hidden512]="--layers 4 --hidden 512 --heads 8 --kv-heads 4 --ffn 1536 --seq 128 --batch 8"
)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown), $(nproc) cores" >&2
results=()
for name in default hidden512; do
  read -r -a flags <<<"${sizes[$name]}"
  a_wall=0 a_cpu=0 b_wall=0 b_cpu=0
  for ((round = 1; round <= rounds; ++round)); do
    echo "== $name, round $round/$rounds: ${sizes[$name]}, $threads thread(s), $warmup warmup + $steps timed steps" >&2
    r="$(rates "$ours" "${flags[@]}" --steps "$steps" --warmup "$warmup")"
    read -r wall cpu <<<"$r"
    a_wall="$(max "$a_wall" "$wall")" a_cpu="$(max "$a_cpu" "$cpu")"
    r="$(rates "$python" "$ROOT/bench/train_throughput_torch.py" "${flags[@]}" \
               --steps "$steps" --warmup "$warmup" --threads "$threads")"
    read -r wall cpu <<<"$r"
    b_wall="$(max "$b_wall" "$wall")" b_cpu="$(max "$b_cpu" "$cpu")"
  done
  results+=("$(awk -v n="$name" -v a="$a_wall" -v b="$b_wall" -v c="$a_cpu" -v d="$b_cpu" \
                 'BEGIN { printf "%-10s %11.1f %11.1f %9.2fx   %11.1f %11.1f %9.2fx", n, a, b, a / b, c, d, c / d }')")
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "tokens/s, $threads thread(s), best of $rounds rounds:"
printf '%-10s %11s %11s %10s   %11s %11s %10s\n' "" "ours wall" "torch wall" "ours/torch" "ours cpu" "torch cpu" "ours/torch"
printf '%s\n' "${results[@]}"
