#!/usr/bin/env bash
# The reference_torch test: dump_reference writes our model's checkpoint, logits, loss and
# gradients into OUT_DIR, then torch_reference.py recomputes them with PyTorch and compares.
#   run_reference_test.sh DUMP_REFERENCE OUT_DIR
# Python: the first with torch of USP_TORCH_PYTHON, python3 on PATH, /usr/bin/python3
# (tools/torch_python.sh, which says which). No torch is a failure, never a skip: this comparison
# is the model's correctness oracle.
set -euo pipefail
(($# == 2)) || { echo "usage: run_reference_test.sh DUMP_REFERENCE OUT_DIR" >&2; exit 2; }
dumper="$1" out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! python="$("$here/../../tools/torch_python.sh" -v)"; then
  echo "error: reference_torch needs a python with PyTorch, and $python cannot import torch" >&2
  echo "       run ./usp setup (it installs Debian's python3-torch for /usr/bin/python3)," >&2
  echo "       or set USP_TORCH_PYTHON to a python that has torch" >&2
  exit 1
fi

rm -rf "$out"
"$dumper" "$out"
exec "$python" "$here/torch_reference.py" "$out/untied" "$out/tied" "$out/moe" "$out/moe_capacity"
