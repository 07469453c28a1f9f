#!/usr/bin/env bash
# validation_matches.sh OUT LINES REFERENCE... :: CHAPTER...
# The parallel chapters' --eval-every against the single-rank evaluation: runs REFERENCE (one rank:
# chapter 03, or the chapter itself on one rank) with --out OUT_ref --quiet and CHAPTER (under its
# launcher) with --out OUT_run, both with the same seed, steps, data and --eval-every/--eval-batches,
# then checks that
#   - the chapter printed LINES progress lines ending in "val_loss X.XXXX", and no other val_loss;
#   - both summary.json's results.validation evaluated after the same steps, and each held-out
#     loss is the reference's up to fp32 sums in another order: 1e-4 relative, the tolerance of
#     common/train/loss_agreement.hpp (measured: 1e-8 or less).
set -u
out=$1 lines=$2; shift 2
ref=()
while [ $# -gt 0 ] && [ "$1" != "::" ]; do ref+=("$1"); shift; done
shift  # ::
rm -rf "${out}_ref" "${out}_run"
"${ref[@]}" --quiet --out "${out}_ref" >"${out}_ref.log" 2>&1 || { cat "${out}_ref.log"; echo "the reference run failed"; exit 1; }
"$@" --out "${out}_run" >"${out}_run.log" 2>&1 || { cat "${out}_run.log"; echo "the chapter's run failed"; exit 1; }
got=$(grep -Ec ': step +[0-9]+  .*  val_loss [0-9]+[.][0-9]{4}$' "${out}_run.log")
all=$(grep -c val_loss "${out}_run.log")
if [ "$got" -ne "$lines" ] || [ "$all" -ne "$lines" ]; then
  cat "${out}_run.log"; echo "expected $lines progress lines with val_loss, got $got (and $all lines naming val_loss)"; exit 1
fi
python3 - "${out}_ref" "${out}_run" <<'PY'
import json, sys
ref, run = (json.load(open(d + "/summary.json"))["results"]["validation"] for d in sys.argv[1:])
print("reference:", ref)
print("chapter:  ", run)
if not ref["steps"] or ref["steps"] != run["steps"]:
    sys.exit("the held-out loss was evaluated after different steps (or never)")
worst = max(abs(x - y) / abs(y) for x, y in zip(run["losses"], ref["losses"]))
print("largest relative difference: %.1e" % worst)
if not worst <= 1e-4:
    sys.exit("the chapter's held-out losses differ from the single-rank ones by more than 1e-4 relative")
PY
