#!/usr/bin/env bash
# Two nodes on one machine: runs a chapter through tools/cluster/launch.sh across two network
# namespaces joined by a veth pair, each "node" with its own network stack and address, Open MPI
# talking TCP between them (no shared memory), its daemon started on the second node by
# tools/cluster/netns_agent.sh (ip netns exec) instead of ssh. Needs root.
#
#   tools/cluster/two_node_namespaces.sh RANKS_PER_NODE build/bin/chNN_name [chapter flags...]
#
# Node 0 is namespace usp<pid>n0 (10.77.0.1 on veth0), node 1 usp<pid>n1 (10.77.0.2 on veth1);
# mpirun runs on node 0 and places ranks 0..RANKS_PER_NODE-1 there. The pid keeps two runs side
# by side apart. USP_LINK_DOWN_AFTER=S takes node 0's link down S seconds after the start (a
# cable pulled mid-run), and says how long the job lived after it. Everything is removed on exit,
# also on failure or a signal: the processes left in the namespaces, the namespaces, the links.
# Exits with the job's status; 77 where this machine cannot make network namespaces (not root,
# no ip, no permission), saying why. Extra mpirun options: USP_MPIRUN_ARGS, as for launch.sh.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if (($# < 2)); then
  sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2  # the header above
  exit 2
fi
per_node=$1
shift
[[ "$per_node" =~ ^[1-9][0-9]*$ ]] || { echo "two_node_namespaces.sh: RANKS_PER_NODE must be a positive number, got '$per_node'" >&2; exit 2; }
down_after=${USP_LINK_DOWN_AFTER:-}
[[ -z "$down_after" || "$down_after" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
  { echo "two_node_namespaces.sh: USP_LINK_DOWN_AFTER must be a number of seconds, got '$down_after'" >&2; exit 2; }

cannot() { echo "two_node_namespaces.sh: this machine cannot make the two nodes: $*" >&2; exit 77; }
((EUID == 0)) || cannot "network namespaces need root (running as uid $EUID)"
command -v ip > /dev/null || cannot "no 'ip' command (iproute2)"

ns=("usp$$n0" "usp$$n1")
addr=(10.77.0.1 10.77.0.2)
subnet=10.77.0.0/24
# shellcheck disable=SC2317,SC2086  # called by the traps; $pids: one word per process on purpose
remove_nodes() {
  for n in "${ns[@]}"; do
    # Whatever still runs in our namespaces (a daemon, a rank) was started by this script.
    pids=$(ip netns pids "$n" 2> /dev/null)
    if [[ -n "$pids" ]]; then
      echo "two_node_namespaces.sh: ending what was left in $n: $(ps -o pid=,comm= -p "${pids//$'\n'/,}" | xargs)" >&2
      kill -TERM $pids 2> /dev/null  # mpirun takes its ranks down with it; 2 s, then no more asking
      for _ in $(seq 20); do
        [[ -z "$(ip netns pids "$n" 2> /dev/null)" ]] && break
        sleep 0.1
      done
      pids=$(ip netns pids "$n" 2> /dev/null)
      [[ -n "$pids" ]] && kill -KILL $pids 2> /dev/null
    fi
    ip netns del "$n" 2> /dev/null  # takes its end of the veth pair, and so the pair, with it
  done
}
remove_nodes  # namespaces of these names can only be left over from a killed run whose pid was ours
tmp=$(mktemp -d)
job='' pull=''
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  [[ -n "$pull" ]] && kill "$pull" 2> /dev/null
  remove_nodes
  [[ -n "$job" ]] && wait "$job" 2> /dev/null  # quietly: it may have been ended above
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

why=$(ip netns add "${ns[0]}" 2>&1) || cannot "ip netns add failed: $why"
ip netns add "${ns[1]}" || exit 1
# The pair is born in the namespaces, so its names need only be unique there.
ip link add veth0 netns "${ns[0]}" type veth peer name veth1 netns "${ns[1]}" || exit 1
# tcp_retries2 = 5: a node's TCP gives up on an unreachable peer after ~13 s of retransmissions
# rather than Linux's ~15 min (15). The ranks' own waits end by the watchdog (USP_COMM_TIMEOUT),
# but mpirun, after their MPI_Abort, waits for the other node's daemon over a connection with no
# route left, until TCP gives up on it: without this, that is the quarter of an hour a job on a
# real cluster whose node fell off the network would hang for (README, "Beyond one machine").
for i in 0 1; do
  ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "veth$i" &&
    ip -n "${ns[$i]}" link set "veth$i" up && ip -n "${ns[$i]}" link set lo up &&
    ip netns exec "${ns[$i]}" sysctl -qw net.ipv4.tcp_retries2=5 || exit 1
done
# A veth end reports UP once both ends are up (after a moment): wait for it, up to 5 s.
for _ in $(seq 50); do
  ip -n "${ns[1]}" -br link show veth1 | grep -q ' UP ' && break
  sleep 0.1
done
printf '%s slots=%s\n' "${addr[0]}" "$per_node" "${addr[1]}" "$per_node" > "$tmp/hosts"
echo "two nodes: ${ns[0]} (${addr[0]} on veth0) and ${ns[1]} (${addr[1]} on veth1), TCP between them, ranks per node: $per_node"

export USP_NETNS_HOSTS="${addr[0]}=${ns[0]} ${addr[1]}=${ns[1]}"
# The daemon on node 1 through the agent; the MPI traffic (btl) and Open MPI's own (oob) over
# the veth subnet, TCP only.
export USP_MPIRUN_ARGS="--mca plm_rsh_agent $here/netns_agent.sh --mca plm_rsh_no_tree_spawn 1
  --mca btl tcp,self --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet ${USP_MPIRUN_ARGS:-}"
# mpirun on node 0, under that node's name (netns_agent.sh names node 1 the same way).
# shellcheck disable=SC2016  # expanded by that shell
ip netns exec "${ns[0]}" unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' "${ns[0]}" \
  "$here/launch.sh" "$tmp/hosts" $((2 * per_node)) "$@" &
job=$!
if [[ -n "$down_after" ]]; then
  (
    sleep "$down_after"
    ip -n "${ns[0]}" link set veth0 down && date +%s.%N > "$tmp/down" &&
      echo "two_node_namespaces.sh: veth0 of ${ns[0]} taken down after $down_after s" >&2
  ) &
  pull=$!
fi
wait "$job"
rc=$?
if [[ -s "$tmp/down" ]]; then
  awk -v down="$(cat "$tmp/down")" -v now="$(date +%s.%N)" -v rc=$rc \
    'BEGIN { printf "two_node_namespaces.sh: the job ended %.1f s after the link went down (exit status %d)\n", now - down, rc }' >&2
fi
exit $rc
