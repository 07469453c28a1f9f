"""The calculator's sweep CSVs (calc::write_sweep_csv / usp_calc --sweep NAME --csv FILE), as the
analytic plot scripts read them: the memory categories they stack, and one reader that names
the sweep to regenerate when the file is missing or is not a sweep.

Not a figure itself (./usp plots runs plots/chNN_*.py only); the scripts import it from their
own folder.
"""
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
    from figure_io import read_csv

    return read_csv(path, REQUIRED, f"usp_calc --sweep {sweep} --csv {path}")


def read_sweep(doc, default_in, csv_name, sweep):
    """The command line of a script over one sweep CSV (--in: the CSV or the folder holding it,
    default default_in; --out) and the CSV: (args, its path, its rows)."""
    from figure_io import parse_args

    args = parse_args(doc, default_in, f"{csv_name} or the folder holding it")
    path = csv_path(args.inp, csv_name)
    return args, path, read_rows(path, sweep)


def single_rank(row):
    """Whether a sweep row is one GPU's: every parallel degree 1, no ZeRO."""
    return all(int(row[k]) == 1 for k in ("dp", "tp", "cp", "pp")) and int(row["zero"]) == 0


H100_GIB = 80  # an H100's memory, in the unit of the axes (the playbook's "80 GB")


def by_degree(rows, dim):
    """The first model, mixed precision, every parallel degree but `dim` at 1:
    (model, {(recompute, degree of dim): [row, ...] by seq})."""
    others = [k for k in ("dp", "tp", "cp", "pp") if k != dim]
    panels, model = {}, None
    for r in rows:
        if r["precision"] != "mixed" or any(int(r[k]) != 1 for k in others):
            continue
        model = model or r["model"]
        if r["model"] == model:
            panels.setdefault((r["recompute"], int(r[dim])), []).append(r)
    for key in panels:
        panels[key].sort(key=lambda r: int(r["seq"]))
    return model, panels


def stack_bars(ax, cells, total_size):
    """One panel: for each row (a sequence length) the memory categories stacked in GiB, the total
    above (fontsize total_size), the H100's 80 GB dashed; a tick per bar, for the caller to label."""
    x = range(len(cells))
    bottom = [0.0] * len(cells)
    for column, _label, colour in CATEGORIES:
        heights = [int(r[column]) / GIB for r in cells]
        ax.bar(x, heights, 0.7, bottom=bottom, color=colour)
        bottom = [b + h for b, h in zip(bottom, heights)]
    for xi, total in zip(x, bottom):
        ax.annotate(f"{total:,.0f}", (xi, total), ha="center", va="bottom", fontsize=total_size,
                    xytext=(0, 2), textcoords="offset points")
    ax.axhline(H100_GIB, color="black", linestyle="--", linewidth=1)
    ax.set_xticks(list(x))


def legend_handles():
    """The legend of stack_bars: the categories, then the H100's line."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=colour, label=name) for _c, name, colour in CATEGORIES]
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1, label=f"H100: {H100_GIB} GB"))
    return handles


def plot_by_degree(plt, rows, dim, label, title):
    """One row of panels per recomputation mode, one panel per degree of `dim` (labelled
    `label`, e.g. "CP"), for each sequence length a stack of the memory categories with the H100's
    80 GB dashed; every panel shares one scale. Returns the figure (None when no row fits)."""
    model, panels = by_degree(rows, dim)
    if not panels:
        return None
    modes = list(dict.fromkeys(mode for mode, _ in panels))
    degrees = sorted({d for _, d in panels})
    fig, axes = plt.subplots(len(modes), len(degrees), figsize=(3.6 * len(degrees), 3.9 * len(modes)), squeeze=False,
                             sharey=True)
    for row, mode in enumerate(modes):
        for col, degree in enumerate(degrees):
            ax = axes[row][col]
            cells = panels.get((mode, degree), [])
            stack_bars(ax, cells, 6.5)
            ax.set_xticklabels([f"{int(r['seq']) // 1024}k" for r in cells], fontsize=8)
            ax.set_title(f"{label} {degree}, {mode} recomputation", fontsize=9)
            ax.grid(True, axis="y", alpha=0.3)
            if row == len(modes) - 1:
                ax.set_xlabel("sequence length")
        axes[row][0].set_ylabel("memory per GPU (GiB)")
    axes[0][0].legend(handles=legend_handles(), fontsize=7.5, loc="upper left")
    any_row = next(iter(panels.values()))[0]
    fig.suptitle(f"{model} ({int(any_row['num_parameters']) / 1e9:.1f}B) per GPU {title} — mixed precision, b = 1",
                 fontsize=11)
    return fig


def main_by_degree(doc, default_in, csv_name, dim, label, title, png):
    """A script that draws plot_by_degree of one sweep CSV (chapters 07 and 08): --in the CSV or
    its folder (default default_in), --out the folder of `png`; exits with a message when no row
    fits (mixed precision, every degree but `dim` at 1)."""
    from figure_io import plt, save

    args, path, rows = read_sweep(doc, default_in, csv_name, dim)
    fig = plot_by_degree(plt, rows, dim, label, title)
    if fig is None:
        others = " = ".join(k for k in ("dp", "tp", "cp", "pp") if k != dim)
        sys.exit(f"{path}: no rows with mixed precision and {others} = 1")
    save(fig, args.out, png, rect=(0, 0, 1, 0.95))
