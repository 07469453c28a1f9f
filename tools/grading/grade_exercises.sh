#!/usr/bin/env bash
# grade_exercises.sh BUILD_DIR NN [K]: grades chapter NN's exercises (or exercise NN.K alone)
# against the student's files in exercises/NN_name/, one exercise at a time, and ends with one
# line per exercise:
#     08.1  passed (5 test runs)
#     08.2  not implemented yet (exercise 08.2: zb_h1 still throws)
#     08    the chapter's other tests, which use every exercise: failed: test case '...' at ...
# A test case grades exercise NN.K when its name says "exercise NN.K"; the chapter's remaining
# test cases (the whole trainer, the executor) run last, as "NN". Each pass is ctest over the
# exercise variant (label exNN, -C exercises) with USP_TEST_FILTER narrowing the test cases
# (tests/support/mpi_catch_main.cpp). With K, ctest's output is shown; without, one line per
# exercise and the log files. Exit 0 only when every graded pass passed.
# Called by ./usp test NN[.K] --exercises (which builds first); USP_JOBS sets ctest -j.
set -uo pipefail

build="$1" nn="$2" only="${3:-}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/tools/grading/first_failure.sh"
jobs="${USP_JOBS:-$(nproc 2>/dev/null || echo 2)}"
exdir="$(compgen -G "$root/exercises/${nn}_*" | head -n 1)"
[[ -n "$exdir" ]] || { echo "grade: chapter $nn has no exercises/${nn}_*/" >&2; exit 2; }

# The exercises, named in the reference files' headers ("Exercise 08.1: ...") and the stubs; each
# stub's message ("exercise 08.1: one_f_one_b"), from the student's files while it is there.
mapfile -t ids < <(grep -ohiE "exercise ${nn}\.[0-9]+" "$root/solutions/${exdir##*/}"/* "$exdir"/* |
                   sed 's/^[Ee]xercise //' | sort -u -V)
((${#ids[@]} > 0)) || { echo "grade: no \"exercise $nn.K\" in solutions/${exdir##*/}/ or $exdir" >&2; exit 2; }
if [[ -n "$only" ]]; then
  [[ " ${ids[*]} " == *" $nn.$only "* ]] ||
    { echo "grade: chapter $nn has no exercise $nn.$only (its exercises: ${ids[*]})" >&2; exit 2; }
fi
# The stubs' messages of this chapter and of the earlier chapters whose exercise functions its code
# calls (EXERCISES_OF in its CMakeLists.txt: chapter 10 runs 05's ZeRO-1 step), whose stubs its
# exercise variant links too.
used="$(grep -ohE 'EXERCISES_OF( +[0-9]{2})+' "$root/chapters/${exdir##*/}/CMakeLists.txt" | grep -oE '[0-9]{2}' || true)"
stub_files=("$exdir"/*)
for mm in $used; do stub_files+=("$root"/exercises/"$mm"_*/*); done
stub_patterns="$(grep -ohE "\"exercise [0-9]{2}\.[0-9]+: [^\"(]+" "${stub_files[@]}" | tr -d '"' |
                 sed -E 's/ +(—.*)?$//' | sort -u)"

logs="$build/Testing/grades"
mkdir -p "$logs"

# run_pass NAME FILTER: ctest over the exercise variant with the filter; sets rc and log.
run_pass() {
  log="$logs/$1.log"
  rc=0
  if [[ -n "$only" ]]; then
    USP_TEST_FILTER="$2" ctest --test-dir "$build" -C exercises -L "^ex${nn}\$" --output-on-failure \
      --no-tests=error -j "$jobs" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    # The counts below need every test's output, which --output-on-failure hides for passes.
    [[ $rc -ne 0 ]] || USP_TEST_FILTER="$2" ctest --test-dir "$build" -C exercises -L "^ex${nn}\$" -V \
      -j "$jobs" >"$log" 2>&1 || rc=$?
  else
    USP_TEST_FILTER="$2" ctest --test-dir "$build" -C exercises -L "^ex${nn}\$" -V --no-tests=error \
      -j "$jobs" >"$log" 2>&1 || rc=$?
  fi
}

# test_runs LOG: how many test cases ran, summed over every run that printed Catch2's totals.
test_runs() {
  grep -oE '(in [0-9]+ test case|test cases: +[0-9]+ \|)' "$1" | grep -oE '[0-9]+' |
    awk '{ n += $1 } END { print n + 0 }'
}

# verdict ID LOG RC: one line saying how the pass went.
verdict() {
  local id="$1" log="$2" rc="$3" stub first
  if ((rc == 0)); then
    local runs
    runs="$(test_runs "$log")"
    if ((runs == 0)); then
      echo "no test case names \"exercise $id\": nothing graded it (a gap in the tests)"
      return 1
    fi
    echo "passed ($runs test case runs)"
    return 0
  fi
  stub="$(grep -oF -f <(echo "$stub_patterns") "$log" | sort -u | head -n 5)"
  if grep -qF "exercise $id:" <<<"$stub"; then
    echo "not implemented yet ($(grep -F "exercise $id:" <<<"$stub" | head -n 1) still throws NotImplemented)"
  elif [[ -n "$stub" ]]; then
    echo "waits for $(grep -oE "^exercise [0-9]{2}\.[0-9]+" <<<"$stub" | cut -c10- | sort -u -V | paste -sd, - |
                      sed 's/,/, /g'), not implemented yet"
  elif first="$(first_failure "$log" "$root")"; then
    echo "failed: $first" | cut -c1-400
  elif grep -qE '\*\*\*Timeout|Timeout +[0-9.]+ sec' "$log"; then
    echo "failed: a test timed out (a rank left waiting?)"
  else
    echo "failed (see the log)"
  fi
  return 1
}

lines=() status=0
passes=("${ids[@]}")
[[ -z "$only" ]] || passes=("$nn.$only")
for id in "${passes[@]}"; do
  run_pass "$id" "*exercise $id*"
  line="$(verdict "$id" "$log" "$rc")" || status=1
  lines+=("$(printf '%-6s %s' "$id" "$line")")
done
if [[ -z "$only" ]]; then
  rest=""
  for id in "${ids[@]}"; do rest+="~*exercise $id*"; done
  run_pass "$nn" "$rest"
  if ((rc == 0)) && (($(test_runs "$log") == 0)); then
    lines+=("$(printf '%-6s %s' "$nn" "no other tests: each of the chapter's test cases grades one exercise")")
  else
    line="$(verdict "$nn" "$log" "$rc")" || status=1
    lines+=("$(printf '%-6s %s' "$nn" "the chapter's other tests: $line")")
  fi
fi

echo
echo "Chapter $nn, exercise by exercise (logs: $logs/):"
printf '  %s\n' "${lines[@]}"
exit "$status"
