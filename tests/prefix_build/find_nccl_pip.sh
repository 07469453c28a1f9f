#!/usr/bin/env bash
# find_nccl_pip.sh SOURCE_DIR: cmake/FindNCCL.cmake finds NCCL as pip's nvidia-nccl-cuXX package
# lays it out (site-packages/nvidia/nccl/{include/nccl.h, lib/libnccl.so.2}, no libnccl.so), in
# a python's site-packages and through NCCL_HOME, and says why when there is none.
set -euo pipefail
src="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
site="$work/site-packages"
mkdir -p "$site/nvidia/nccl/include" "$site/nvidia/nccl/lib"
touch "$site/nvidia/nccl/include/nccl.h" "$site/nvidia/nccl/lib/libnccl.so.2"
python="$(python3 -c 'import sys; print(sys.executable)')"
cat >"$work/find.cmake" <<CMAKE
include("$src/cmake/FindNCCL.cmake")
message("found=\${NCCL_FOUND} library=\${NCCL_LIBRARY} include=\${NCCL_INCLUDE_DIR} why=\${NCCL_WHY_NOT}")
CMAKE
# The system's own NCCL (a CUDA toolkit's, found through PATH) must not answer for the package:
# PATH and CMAKE_PREFIX_PATH hold nothing with NCCL.
# find_nccl [VAR=value ...] cmake [-Dvar=value ...]
find_nccl() { env -u NCCL_HOME -u NCCL_ROOT -u CMAKE_PREFIX_PATH PATH=/usr/bin:/bin "$@" -P "$work/find.cmake" 2>&1; }
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$(find_nccl PYTHONPATH="$site" cmake -DNCCL_PYTHONS="$python")"
echo "pip package:  $out"
[[ "$out" == *"found=TRUE library=$site/nvidia/nccl/lib/libnccl.so.2 include=$site/nvidia/nccl/include"* ]] ||
  fail "the pip package's libnccl.so.2 was not found"

out="$(find_nccl NCCL_HOME="$site/nvidia/nccl" cmake)"
echo "NCCL_HOME:    $out"
[[ "$out" == *"found=TRUE library=$site/nvidia/nccl/lib/libnccl.so.2"* ]] || fail "NCCL_HOME was not used"

out="$(find_nccl cmake -DNCCL_PYTHONS="$python")"
echo "none:         $out"
[[ "$out" == *"found=FALSE"*"why=neither nccl.h nor libnccl in NCCL_HOME/NCCL_ROOT"*"the nvidia-nccl pip package of $python"* ]] ||
  fail "no NCCL, but not said why"
echo "FindNCCL: the pip layout, NCCL_HOME and the reason for none, as expected"
