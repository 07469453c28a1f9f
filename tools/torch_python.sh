#!/usr/bin/env bash
# torch_python.sh [-v]: the python that the PyTorch checks run (tests/reference,
# bench/compare_torch.sh, ./usp setup). The first of
#   USP_TORCH_PYTHON (when set: that one, torch or not),
#   python3 on PATH (a venv, conda or pyenv python with pip's torch),
#   /usr/bin/python3 (Debian's, for which ./usp setup installs python3-torch)
# that has torch (found, not imported: importing torch takes seconds); with none, the last tried.
# Prints its path; exit 0 when it has torch, 1 when not. -v: says on stderr which and why.
set -uo pipefail
verbose=0
[[ "${1:-}" == -v ]] && verbose=1

has_torch() {
  "$1" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is None)" >/dev/null 2>&1
}
say() { ((verbose == 0)) || echo "torch python: $*" >&2; }

if [[ -n "${USP_TORCH_PYTHON:-}" ]]; then
  echo "$USP_TORCH_PYTHON"
  if has_torch "$USP_TORCH_PYTHON"; then say "$USP_TORCH_PYTHON (USP_TORCH_PYTHON)"; exit 0; fi
  say "USP_TORCH_PYTHON=$USP_TORCH_PYTHON has no torch"
  exit 1
fi
tried=()
for py in "$(command -v python3 2>/dev/null)" /usr/bin/python3; do
  [[ -n "$py" ]] || continue
  tried+=("$py")
  if has_torch "$py"; then
    echo "$py"
    if [[ "$py" == /usr/bin/python3 && "${tried[0]}" != /usr/bin/python3 ]]; then
      say "$py (python3 on PATH, ${tried[0]}, has no torch; USP_TORCH_PYTHON is unset)"
    else
      say "$py (USP_TORCH_PYTHON is unset)"
    fi
    exit 0
  fi
done
echo /usr/bin/python3
say "none has torch: USP_TORCH_PYTHON is unset, and neither python3 on PATH nor /usr/bin/python3 (${tried[*]}) has it"
exit 1
