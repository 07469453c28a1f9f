#!/usr/bin/env bash
# Runs one chapter across the machines of an Open MPI hostfile: one rank per slot, ranks placed
# node by node, so that ranks 0..k-1 share the first node. Each rank finds its node-local index
# itself (MPI_COMM_TYPE_SHARED) and, with --device auto or cuda, takes GPU local_rank % GPUs: give
# each node as many slots as it has GPUs for one rank per GPU (NCCL between them).
#
#   tools/cluster/launch.sh HOSTFILE RANKS build/bin/chNN_name [chapter flags...]
#
# HOSTFILE lines look like "node017 slots=8". The environment a rank needs is forwarded from
# this shell: PATH and LD_LIBRARY_PATH (the same build at the same path on every node: a shared
# file system), OPENBLAS_NUM_THREADS=1 (one core per rank on the CPU path), the NCCL_* and
# USP_* variables that are set (e.g. NCCL_SOCKET_IFNAME=ib0 to pick the network, NCCL_DEBUG=INFO
# to see what NCCL chose, USP_COMM_TIMEOUT). USP_LAUNCH_DRY_RUN=1 prints the command instead of
# running it. Extra mpirun options go in USP_MPIRUN_ARGS (e.g. "--mca btl_tcp_if_include eth0").
# Tried on two nodes without a cluster: tools/cluster/two_node_namespaces.sh runs it across two
# network namespaces of one machine (README, "Beyond one machine", quotes that run).
set -euo pipefail

if (($# < 3)); then
  sed -n '2,/^[^#]/{/^#/p}' "$0" | sed 's/^# \{0,1\}//' >&2  # the header above
  exit 2
fi
hostfile=$1 ranks=$2
shift 2
[[ -r "$hostfile" ]] || { echo "launch.sh: hostfile '$hostfile' is missing or unreadable" >&2; exit 2; }
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "launch.sh: RANKS must be a positive number, got '$ranks'" >&2; exit 2; }
[[ -x "$1" ]] || { echo "launch.sh: '$1' is not an executable (build first: ./usp build)" >&2; exit 2; }
slots=$(awk '!/^[[:space:]]*(#|$)/ { n = 1; for (i = 2; i <= NF; ++i) if ($i ~ /^slots=/) n = substr($i, 7); s += n } END { print s + 0 }' "$hostfile")
((ranks <= slots)) || { echo "launch.sh: $ranks ranks but the hostfile offers $slots slots" >&2; exit 2; }

export OPENBLAS_NUM_THREADS=1
cmd=(mpirun --hostfile "$hostfile" -np "$ranks" --map-by slot --bind-to none -x PATH -x OPENBLAS_NUM_THREADS)
[[ -n "${LD_LIBRARY_PATH:-}" ]] && cmd+=(-x LD_LIBRARY_PATH)  # mpirun warns about an unset one
while IFS='=' read -r name _; do
  [[ "$name" == NCCL_* || "$name" == USP_* || "$name" == OMPI_ALLOW_RUN_AS_ROOT* ]] && cmd+=(-x "$name")
done < <(env)
# shellcheck disable=SC2206  # USP_MPIRUN_ARGS is a list of words on purpose
[[ -n "${USP_MPIRUN_ARGS:-}" ]] && cmd+=(${USP_MPIRUN_ARGS})
cmd+=("$@")
if [[ "${USP_LAUNCH_DRY_RUN:-0}" == 1 ]]; then
  printf '%q ' "${cmd[@]}"
  echo
  exit 0
fi
exec "${cmd[@]}"
