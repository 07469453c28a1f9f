"""What every plot script shares: its command line (--in, --out), matplotlib without a display,
and writing the PNG. Not a figure itself (./usp plots runs plots/chNN_*.py only); the scripts
import it from their own folder.

    from figure_io import plt, parse_args, save
    args = parse_args(__doc__, "out/03_grad_accumulation", "folder with accumulation.csv")
    ...
    save(fig, args.out, "ch03_accumulation.png")
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")  # no display: the scripts only write files
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported for the scripts)

MIB = float(1 << 20)


def parse_args(doc, default_in, in_help, extra=None):
    """--in (args.inp, default default_in) and --out (args.out, default plots/out); `extra`, if
    given, is called with the parser to add a script's own options. The first line of the
    script's docstring is the description."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--in", dest="inp", default=default_in, help=in_help)
    ap.add_argument("--out", default="plots/out", help="folder for the PNG")
    if extra:
        extra(ap)
    return ap.parse_args()


def save(fig, out_dir, name, rect=None):
    """Lays the figure out (within rect, when a suptitle needs room above it), writes
    out_dir/name at 120 dpi (creating the folder) and says so."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    if rect:
        fig.tight_layout(rect=rect)
    else:
        fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")
    return path


def read_csv(path, needed, producer):
    """The rows of a CSV a chapter wrote (csv.DictReader), or exit with a message: the file is
    missing ("run <producer> first") or lacks a column of `needed`."""
    import csv
    import sys
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: {e.strerror} (run {producer} first)")
    if not rows or any(c not in rows[0] for c in needed):
        sys.exit(f"{path}: expected the columns {','.join(needed)} and at least one row")
    return rows


def distinct(rows, column):
    """The values of `column`, each once, in the order the rows first show them."""
    seen = []
    for r in rows:
        if r[column] not in seen:
            seen.append(r[column])
    return seen
