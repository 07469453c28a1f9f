#!/usr/bin/env bash
# run_mutants.sh BUILD_DIR [NN | NN.K]: proves that the exercise tests grade. Each file
# tests/mutants/NN.K-name.patch is one known-wrong solution of exercise NN.K: a patch of
# solutions/NN_name/ whose first line ("# ...") says what is wrong. For each mutant: the build's
# mutant copy of the solutions (BUILD_DIR/mutant/solutions/, cmake/UspChapter.cmake) is reset to
# the solutions, the patch applied, chapter NN's mutant tests built (target usp_mutants_chNN) and
# run (ctest -C mutants -L muNN, stopping at the first failure): the test cases of exercise NN.K
# first, then, if they all pass, every test of the chapter. The mutant must make them fail;
# one whose tests pass SURVIVED (a test is missing), and so did one that only a timeout stopped
# (tests fail, they never hang). Exit 0 only when every mutant was caught.
# Called by ./usp test --mutants [CH] (which builds first); USP_JOBS sets the build's and ctest's -j.
set -uo pipefail

build="$1" only="${2:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/tools/grading/first_failure.sh"
jobs="${USP_JOBS:-$(nproc 2>/dev/null || echo 2)}"
logs="$build/Testing/mutants"
mkdir -p "$logs"

# reset_copy NN_name: the mutant copy of one chapter equal to the solutions again (files that did
# not change keep their time stamps, so the build recompiles only what a patch touched).
reset_copy() {
  local f copy="$build/mutant/solutions/$1"
  mkdir -p "$copy"
  for f in "$root/solutions/$1"/*; do
    cmp -s "$f" "$copy/${f##*/}" || cp "$f" "$copy/${f##*/}"
  done
}

shopt -s nullglob
patches=("$root"/tests/mutants/${only:+$only}*.patch)
if [[ -n "$only" && "$only" != *.* ]]; then patches=("$root"/tests/mutants/"$only".*.patch); fi
((${#patches[@]} > 0)) || { echo "mutants: no tests/mutants/${only}*.patch" >&2; exit 2; }

caught=0 failed=() start=$SECONDS
for patch in "${patches[@]}"; do
  id="$(basename "$patch" .patch)" nn="${id:0:2}"
  chapter="$(cd "$root/solutions" && compgen -G "${nn}_*" | head -n 1)"
  what="$(head -n 1 "$patch" | sed 's/^# *//')"
  log="$logs/$id.log"
  t0=$SECONDS
  reset_copy "$chapter"
  if ! patch -p1 -s -d "$build/mutant" <"$patch" >"$log" 2>&1; then
    echo "BROKEN   $id: the patch does not apply to solutions/$chapter/ (update it)"
    failed+=("$id"); continue
  fi
  if ! cmake --build "$build" --target "usp_mutants_ch$nn" -j "$jobs" >>"$log" 2>&1; then
    echo "BROKEN   $id: does not compile (a mutant must be wrong, not ill-formed; see $log)"
    failed+=("$id"); continue
  fi
  # First the test cases that grade this exercise ("exercise NN.K" in their names); only when they
  # all pass, the chapter's other tests too (a mutant may show only in the whole trainer). Either
  # way a caught mutant failed a test of chapter NN; the first pass just spares running the rest.
  rc=0
  USP_TEST_FILTER="*exercise ${id%%-*}*" ctest --test-dir "$build" -C mutants -L "^mu${nn}\$" --output-on-failure \
    --no-tests=error --stop-on-failure -j "$jobs" >>"$log" 2>&1 || rc=$?
  if ((rc == 0)) && ! grep -qE '\*\*\*Timeout' "$log"; then
    ctest --test-dir "$build" -C mutants -L "^mu${nn}\$" --output-on-failure --no-tests=error --stop-on-failure \
      -j "$jobs" >>"$log" 2>&1 || rc=$?
  fi
  secs=$((SECONDS - t0))
  if grep -qE '\*\*\*Timeout' "$log"; then
    echo "SURVIVED $id ($what): only a timeout stopped its tests (${secs} s); a test must fail, not hang"
    failed+=("$id")
  elif ((rc == 0)); then
    echo "SURVIVED $id ($what): every test of chapter $nn passes on it (${secs} s); a test is missing"
    failed+=("$id")
  else
    first="$(first_failure "$log" "$root" || true)"
    echo "caught   $id ($what) in ${secs} s: ${first:-see $log}" | cut -c1-300
    caught=$((caught + 1))
  fi
done
for chapter in $(cd "$root/solutions" && compgen -G "[0-9][0-9]_*"); do
  [[ -d "$build/mutant/solutions/$chapter" ]] && reset_copy "$chapter"
done

echo
echo "mutants: $caught of ${#patches[@]} caught in $((SECONDS - start)) s (logs: $logs/)"
((${#failed[@]} == 0)) || { echo "mutants not caught or broken: ${failed[*]}" >&2; exit 1; }
