#!/usr/bin/env bash
# Open MPI's launch agent for "nodes" that are network namespaces of this machine, in place of
# ssh (mpirun --mca plm_rsh_agent tools/cluster/netns_agent.sh): mpirun calls it as it would
# call ssh, "netns_agent.sh HOST COMMAND...", to start its daemon on HOST; this runs COMMAND in
# the namespace that USP_NETNS_HOSTS maps HOST to, a list of HOST=NAMESPACE words
# ("10.77.0.2=usp123n1"), under the host name NAMESPACE. tools/cluster/two_node_namespaces.sh
# sets it up; needs root.
set -euo pipefail
host=${1:?"netns_agent.sh: usage: netns_agent.sh HOST COMMAND..."}
shift
for pair in ${USP_NETNS_HOSTS:-}; do
  # As ssh does, the remote side gets one command line for its shell. A node has a host name of
  # its own too (its own UTS namespace): Open MPI tells nodes apart by it, and two "nodes" both
  # called after this machine mix up which ranks share one (MPI_Comm_split_type crashed).
  ns=${pair#*=}
  [[ "${pair%%=*}" == "$host" ]] && exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns && $*"
done
echo "netns_agent.sh: no namespace for host '$host' in USP_NETNS_HOSTS='${USP_NETNS_HOSTS:-}'" >&2
exit 255
