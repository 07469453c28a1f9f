#!/usr/bin/env bash
# lesson_commands.sh ROOT BUILD_DIR: every command a lesson prints runs as printed. From each
# chapters/NN_name/README.md, the lines inside ``` fences that start with "./usp mpirun" or
# "build/bin/" are run in order, each chapter in a scratch directory of its own that looks like
# the repository's root to them (build -> BUILD_DIR, usp, README.md, chapters, docs: links), so
# the text is run exactly, and what the commands write (out/, ckpt/) stays in the scratch. A
# lesson's commands may build on each other (--save, then --resume). A command that trains more
# than 10 steps runs 4 (--steps N lowered; nothing else changes). A command that needs a GPU
# (--device cuda, or chapter 11's kernels) is skipped, saying so, when none is visible. Each must
# exit 0 within USP_LESSON_LIMIT seconds (default 180). Prints one line per command; exits 1 if
# any failed.
set -uo pipefail
root="$(cd "$1" && pwd)" build="$(cd "$2" && pwd)"
limit=$(( ${USP_LESSON_LIMIT:-180} * ${USP_TIMEOUT_SCALE:-1} ))
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then gpu=1; fi

failed=0 ran=0 skipped=0
for lesson in "$root"/chapters/[0-9][0-9]_*/README.md; do
  chapter="$(basename "$(dirname "$lesson")")"
  mkdir -p "$scratch/$chapter"
  ln -s "$build" "$scratch/$chapter/build"
  for f in usp README.md chapters docs; do ln -s "$root/$f" "$scratch/$chapter/$f"; done
  while IFS= read -r line; do
    cmd="$(sed -E 's/[[:space:]]+#.*$//; s/[[:space:]]+$//' <<<"$line")"  # without the lesson's comment
    if ((gpu == 0)) && [[ "$cmd" == *"--device cuda"* || ( "$cmd" == *ch11_gpu_primer* && "$cmd" != *--list* ) ]]; then
      echo "skipped  $chapter: $cmd (needs a GPU; none is visible)"
      skipped=$((skipped + 1))
      continue
    fi
    run="$(sed -E 's/--steps ([1-9][0-9]{2,}|[2-9][0-9]|1[1-9])\b/--steps 4/' <<<"$cmd")"
    t0=$SECONDS rc=0
    (cd "$scratch/$chapter" && timeout "$limit" bash -c "$run") </dev/null >"$scratch/out.log" 2>&1 || rc=$?
    ran=$((ran + 1))
    if ((rc == 0)); then
      echo "ran      $chapter: $cmd ($((SECONDS - t0)) s)"
    else
      shown=""
      [[ "$run" == "$cmd" ]] || shown="; ran as: $run"
      echo "FAILED   $chapter: $cmd (exit $rc after $((SECONDS - t0)) s$shown)"
      tail -n 15 "$scratch/out.log" | sed 's/^/           /'
      failed=$((failed + 1))
    fi
  done < <(awk '/^```/ { fenced = !fenced; next } fenced && /^(\.\/usp mpirun|build\/bin\/)/' "$lesson")
done
echo "lesson commands: $ran ran, $failed failed, $skipped skipped (no GPU)"
((failed == 0 && ran > 0))
