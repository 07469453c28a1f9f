#!/usr/bin/env bash
# Two nodes on this machine (tools/cluster/two_node_namespaces.sh: two network namespaces joined
# by a veth pair, Open MPI over TCP, its daemon started through ip netns exec): chapters 04 and 06
# on 2 + 2 ranks give the losses of the same run on one node of 4 ranks, every rank finds its
# node-local rank (the Runtime's layout line), and node 0's link taken down mid-run ends the job
# with the watchdog's message, with no process left behind. Exits 77 (skipped), saying why, where
# this machine cannot make network namespaces (not root, no permission).
#   cluster_two_nodes.sh TWO_NODE_NAMESPACES_SH LAUNCH_SH CH04_EXECUTABLE CH06_EXECUTABLE
set -uo pipefail
two_nodes=$1 launch=$2 ch04=$3 ch06=$4
scale=${USP_TIMEOUT_SCALE:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'localhost slots=4\n' > "$tmp/one_node"
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# The layout each rank found (MPI_COMM_TYPE_SHARED): ranks 0-1 on node 0, 2-3 on node 1.
layout="[usp] 4 ranks on 2 nodes (node-local ranks from MPI_COMM_TYPE_SHARED): ranks [0,1] local [0,1]; ranks [2,3] local [0,1]"

# same_losses NAME EXE FLAGS...: one node of 4 ranks, then two nodes of 2; the same losses.
same_losses() {
  local name=$1 exe=$2 rc
  shift 2
  if ! timeout -k 5 $((30 * scale)) "$launch" "$tmp/one_node" 4 "$exe" "$@" --out "$tmp/$name.one" > "$tmp/$name.one.log" 2>&1; then
    cat "$tmp/$name.one.log"
    fail "$name on one node failed"
    return
  fi
  grep -qF "[usp] 4 ranks on" "$tmp/$name.one.log" && fail "$name on one node printed a layout of several nodes"
  timeout -k 5 $((30 * scale)) "$two_nodes" 2 "$exe" "$@" --out "$tmp/$name.two" > "$tmp/$name.two.log" 2>&1
  rc=$?
  if ((rc == 77)); then  # this machine cannot make namespaces: the script said why
    cat "$tmp/$name.two.log"
    exit 77
  fi
  if ((rc != 0)); then
    cat "$tmp/$name.two.log"
    fail "$name on two nodes exited $rc"
    return
  fi
  grep -F "two nodes:" "$tmp/$name.two.log"
  if grep -qF "$layout" "$tmp/$name.two.log"; then
    echo "$layout"
  else
    fail "$name on two nodes: expected the layout line '$layout' in:" && cat "$tmp/$name.two.log"
  fi
  # The same reductions in the same order over TCP as over shared memory: the same bits.
  python3 - "$name" "$tmp/$name.one/summary.json" "$tmp/$name.two/summary.json" <<'PY' || fail "$name: the losses differ"
import json, sys
name, one, two = sys.argv[1], json.load(open(sys.argv[2]))["losses"], json.load(open(sys.argv[3]))["losses"]
print(f"{name} losses, one node:  {one}\n{name} losses, two nodes: {two}")
sys.exit(0 if one == two and len(one) > 0 else 1)
PY
}

# Whether this machine can make the nodes at all (a job of two ranks that do nothing): if not,
# the script says why and exits 77, which skips this test.
timeout -k 5 $((30 * scale)) "$two_nodes" 1 /bin/true > "$tmp/can.log" 2>&1
rc=$?
cat "$tmp/can.log"
((rc == 77)) && exit 77
((rc == 0)) || { echo "FAILED: two ranks doing nothing on two nodes exited $rc"; exit 1; }

small=(--model usp-tiny --seq 32 --mbs 2 --steps 3)
same_losses ch04 "$ch04" "${small[@]}" --dp-mode bucketing --no-baseline
same_losses ch06 "$ch06" "${small[@]}" --tp 2

# Node 0's link down 3 s in (the ranks are training by then), the watchdog at 5 s: the job must
# end with its message, well before the 45 s limit. Until then the ranks train for many steps.
start=$(date +%s)
USP_COMM_TIMEOUT=5 USP_LINK_DOWN_AFTER=3 timeout -k 5 $((45 * scale)) "$two_nodes" 2 "$ch04" \
  --model usp-tiny --seq 32 --mbs 2 --steps 100000 --dp-mode naive --no-baseline --out "$tmp/down" > "$tmp/down.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
cat "$tmp/down.log"
if ((rc == 0)); then
  fail "the job with its link down exited 0"
elif ((rc == 124 || rc == 137)); then
  fail "the job with its link down hung (killed after $((45 * scale)) s)"
fi
grep -q "fatal: .* waited .* (watchdog, USP_COMM_TIMEOUT=5)" "$tmp/down.log" || fail "no watchdog message after the link went down"
# The ranks end at the watchdog's 5 s; mpirun ~13 s later, when the namespaces' TCP gives up on the
# other node's daemon (tcp_retries2 = 5, two_node_namespaces.sh).
after=$(sed -n 's/.*the job ended \([0-9.]*\) s after the link went down.*/\1/p' "$tmp/down.log")
if [[ -z "$after" ]]; then
  fail "the link was not taken down while the job ran"
elif ! awk -v t="$after" -v limit=$((30 * scale)) 'BEGIN { exit !(t < limit) }'; then
  fail "the job ended $after s after the link went down, expected under $((30 * scale)) s"
fi
echo "link down: exit $rc after $took s in all"
# Nothing left behind: the namespaces (and with them the links) are gone.
# shellcheck disable=SC2013  # one namespace name per word
for n in $(grep -o 'usp[0-9]*n[01]' "$tmp"/*.two.log "$tmp/down.log" | cut -d: -f2 | sort -u); do
  ip netns list | grep -qw "$n" && fail "namespace $n is still there"
done
((failures == 0)) && echo "two nodes: ch04 and ch06 give one node's losses, the node-local ranks are right, a link down ends the job"
exit $((failures > 0))
