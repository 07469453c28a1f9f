#!/usr/bin/env bash
# cluster_files.sh USP_PLAN CLUSTERS_DIR: the cluster files shipped with chapter 10.
#   playbook_h100.json holds the same numbers as the built-in cluster (Cluster::playbook): the
#     planner's answer must be the same, layout for layout, with and without the file;
#   frontier_mi250x.json plans the Frontier study's 175B model on its 1024 GCDs (128 nodes; seq
#     2048, 1536 sequences per step, the lesson's assumption) with its best layout within the
#     GCD's 64 GB.
set -euo pipefail
plan="$1" dir="$2"
a="$("$plan" --model playbook-8.86b --nodes 4 --json --top 20)"
b="$("$plan" --model playbook-8.86b --nodes 4 --json --top 20 --cluster "$dir/playbook_h100.json")"
if [[ "$a" != "$b" ]]; then
  echo "playbook_h100.json plans differently from the built-in playbook cluster:"; echo "$a"; echo "$b"; exit 1
fi
f="$("$plan" --model frontier-175b --nodes 128 --seq 2048 --global-batch-tokens 3145728 --json --top 1 \
      --cluster "$dir/frontier_mi250x.json")"
mem="$(sed -n 's/.*"memory_bytes":\([0-9]*\).*/\1/p' <<<"$f")"
if [[ -z "$mem" ]] || ((mem > 64000000000)); then
  echo "frontier-175b on 128 Frontier nodes: no layout, or its memory above 64 GB:"; echo "$f"; exit 1
fi
echo "cluster files: playbook_h100.json = the built-in cluster; frontier-175b on 128 nodes: $mem bytes on the most loaded GCD"
