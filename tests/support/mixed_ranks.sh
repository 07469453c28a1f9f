#!/usr/bin/env bash
# mixed_ranks.sh SECONDS STUB_MARK MESSAGE LAUNCH... -- SOLUTION_EXE ARGS... -- EXERCISE_EXE ARGS...
# One job whose rank 0 runs a chapter built from solutions/ and whose rank 1 runs the same chapter
# built from exercises/ (two executables under one mpirun). It must end cleanly either way:
#   * while the student's exercise is still the stub (the exercise build alone, on 2 ranks, prints
#     STUB_MARK), the ranks disagree on whether the part can run: the job must exit non-zero
#     within SECONDS with MESSAGE exactly once (never hang, never exit 0 with half the ranks
#     having skipped the part);
#   * once the exercise is implemented, both ranks run the same job: it must exit 0.
set -u
limit=$(($1 * ${USP_TIMEOUT_SCALE:-1})); mark=$2; message=$3; shift 3
launch=(); sol=(); ex=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do launch+=("$1"); shift; done
shift
while [ $# -gt 0 ] && [ "$1" != "--" ]; do sol+=("$1"); shift; done
shift
ex=("$@")
np_flag="${launch[1]}"   # the launcher's "-n"/"-np" flag, as CMake's MPIEXEC_NUMPROC_FLAG gives it

probe=$(timeout --kill-after=5 "$limit" "${launch[@]:0:1}" "$np_flag" 2 --oversubscribe "${ex[@]}" 2>&1)
if printf '%s\n' "$probe" | grep -qF -- "$mark"; then
  here="$(dirname "${BASH_SOURCE[0]}")"
  exec "$here/expect_failure.sh" "$limit" "$message" "${launch[@]}" "${sol[@]}" : "$np_flag" 1 "${ex[@]}"
fi
echo "mixed_ranks: the exercise is implemented (no '$mark' on 2 exercise ranks): the mixed job must succeed"
timeout --kill-after=5 "$limit" "${launch[@]}" "${sol[@]}" : "$np_flag" 1 "${ex[@]}"; rc=$?
[ "$rc" -eq 0 ] || { echo "mixed_ranks: exit $rc"; exit 1; }
