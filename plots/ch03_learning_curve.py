#!/usr/bin/env python3
"""Chapter 03: the training loss of every step and the held-out loss where it was evaluated.

Reads <in>/summary.json (written by ch03_grad_accumulation: "losses", one per step, and
"results"."validation" {"steps", "losses"} from --eval-every) and writes
<out>/ch03_learning_curve.png. The held-out loss is measured on data the run never trains on (a
text's last tenth, the synthetic corpus's reserved step): while it follows the training loss down
the model is learning the language, not the sample; a gap that opens is memorisation.

    python3 plots/ch03_learning_curve.py --in out/03_grad_accumulation --out plots/out
"""
import json
import os
import sys

from figure_io import parse_args, plt, save  # noqa: E402


def main():
    args = parse_args(__doc__, "out/03_grad_accumulation", "folder with summary.json")
    path = os.path.join(args.inp, "summary.json")
    with open(path) as f:
        summary = json.load(f)
    losses = summary.get("losses")
    validation = summary.get("results", {}).get("validation", {})
    if not losses:
        sys.exit(f"{path}: no 'losses'")
    data = summary.get("flags", {}).get("data", "?")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(range(len(losses)), losses, "-", color="tab:blue", lw=1, label="training loss (each step's batch)")
    steps, held = validation.get("steps", []), validation.get("losses", [])
    if steps:
        ax.plot(steps, held, "o-", color="tab:orange", label="held-out loss")
        title = f"held-out loss {held[-1]:.3f} nats/token after step {steps[-1]}"
    else:
        title = "no held-out loss (run with --eval-every N)"
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.set_title(f"Training on --data {data}\n{title}", fontsize=10)
    ax.set_xlim(left=0)
    ax.legend()
    save(fig, args.out, "ch03_learning_curve.png")


if __name__ == "__main__":
    main()
