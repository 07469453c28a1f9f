#!/usr/bin/env bash
# The reference_torch test: dump_reference writes our model's checkpoint, logits, loss and
# gradients into OUT_DIR, then torch_reference.py recomputes them with PyTorch and compares.
#   run_reference_test.sh DUMP_REFERENCE OUT_DIR
# Python: USP_TORCH_PYTHON, else /usr/bin/python3 (Debian's, for which ./usp setup installs
# python3-torch; the python3 first on PATH may be another one without torch). No torch is a
# failure, never a skip: this comparison is the model's correctness oracle.
set -euo pipefail
(($# == 2)) || { echo "usage: run_reference_test.sh DUMP_REFERENCE OUT_DIR" >&2; exit 2; }
dumper="$1" out="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${USP_TORCH_PYTHON:-/usr/bin/python3}"

if ! "$python" -c 'import torch' >/dev/null 2>&1; then
  if [[ ! -x "$python" ]] && ! command -v "$python" >/dev/null 2>&1; then
    echo "error: reference_torch needs a python with PyTorch, and there is no $python" >&2
  else
    echo "error: reference_torch needs PyTorch, and $python cannot import torch" >&2
  fi
  echo "       run ./usp setup (it installs Debian's python3-torch for /usr/bin/python3)," >&2
  echo "       or set USP_TORCH_PYTHON to a python that has torch" >&2
  exit 1
fi

rm -rf "$out"
"$dumper" "$out"
exec "$python" "$here/torch_reference.py" "$out/untied" "$out/tied" "$out/moe" "$out/moe_capacity"
