#!/usr/bin/env bash
# tools/cluster/launch.sh (the launcher the Slurm script uses) on this one machine: a hostfile of
# localhost with two slots stands for the nodes. A two-rank data-parallel run must complete with
# world_size 2, and a bad hostfile or rank count must be refused before mpirun starts.
#   cluster_launch.sh LAUNCH_SH CH04_EXECUTABLE
set -uo pipefail
launch=$1 exe=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '# one machine standing for the cluster\nlocalhost slots=2\n' > "$tmp/hosts"
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# expect_refusal TEXT ARGS...: exit 2 and TEXT on stderr.
expect_refusal() {
  local text=$1 out rc
  shift
  out=$("$launch" "$@" 2>&1)
  rc=$?
  [[ $rc == 2 ]] || fail "launch.sh $* exited $rc, expected 2 (output: $out)"
  [[ "$out" == *"$text"* ]] || fail "launch.sh $*: expected '$text' in: $out"
}
expect_refusal "3 ranks but the hostfile offers 2 slots" "$tmp/hosts" 3 "$exe"
expect_refusal "hostfile '$tmp/none' is missing" "$tmp/none" 2 "$exe"
expect_refusal "RANKS must be a positive number, got 'two'" "$tmp/hosts" two "$exe"
expect_refusal "is not an executable" "$tmp/hosts" 2 "$tmp/no-such-chapter"

if ! "$launch" "$tmp/hosts" 2 "$exe" --model usp-tiny --steps 2 --seq 32 --mbs 2 --out "$tmp/out" > "$tmp/log" 2>&1; then
  cat "$tmp/log"
  fail "the two-rank run through launch.sh failed"
elif ! python3 -c "import json, sys; sys.exit(json.load(open('$tmp/out/summary.json'))['world_size'] != 2)"; then
  fail "summary.json does not say world_size 2"
fi
((failures == 0)) && echo "cluster launcher: refusals and a two-rank run on localhost OK"
exit $((failures > 0))
