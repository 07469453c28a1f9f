"""The calculator's sweep CSVs (calc::write_sweep_csv / usp_calc --sweep NAME --csv FILE), as the
analytic plot scripts read them: the memory categories they stack, and one reader that names
the sweep to regenerate when the file is missing or is not a sweep.

Not a figure itself (./usp plots runs plots/chNN_*.py only); the scripts import it from their
own folder.
"""
import csv
import os
import sys

CATEGORIES = [  # (CSV column, legend label, colour), bottom to top
    ("parameters_bytes", "parameters", "tab:blue"),
    ("gradients_bytes", "gradients", "tab:orange"),
    ("optimizer_bytes", "optimizer states", "tab:green"),
    ("activations_bytes", "activations", "tab:red"),
]
REQUIRED = ["model", "num_parameters", "seq", "mbs", "recompute", "precision", "dp", "zero", "tp", "sp", "cp", "pp"] + [
    c[0] for c in CATEGORIES]
GIB = float(1 << 30)


def csv_path(arg, csv_name):
    """--in is the CSV itself or the folder holding it."""
    return os.path.join(arg, csv_name) if os.path.isdir(arg) else arg


def read_rows(path, sweep):
    """The rows of a sweep CSV; exits with a message naming `usp_calc --sweep <sweep>` otherwise."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: {e.strerror} (write it with: usp_calc --sweep {sweep} --csv {path})")
    if not rows or any(k not in rows[0] for k in REQUIRED):
        sys.exit(f"{path}: expected the calculator's sweep columns ({','.join(REQUIRED)})")
    return rows
