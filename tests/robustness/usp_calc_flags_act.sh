#!/usr/bin/env bash
# usp_calc_flags_act.sh USP_CALC
# Flags that are accepted act: --list-models --json prints JSON (not the text table), and --pp
# that does not divide the layers says how the stages are split instead of a misleading count.
set -u
calc=$1
fail() { echo "usp_calc_flags_act: $*"; exit 1; }

models=$("$calc" --list-models --json) || fail "--list-models --json exited non-zero"
printf '%s\n' "$models" | python3 -c '
import json, sys
models = json.load(sys.stdin)
assert isinstance(models, list) and len(models) >= 8, models
names = [m["model"] for m in models]
assert "llama3.1-8b" in names and "usp-tiny" in names, names
eight_b = models[names.index("llama3.1-8b")]
assert eight_b["layers"] == 32 and eight_b["num_parameters"] == 8030261248, eight_b
' || fail "--list-models --json is not the JSON list of models: $models"

table=$("$calc" --pp 7) || fail "--pp 7 exited non-zero"
grep -qF "32 layers over 7 stages: 4 × 5 + 3 × 4; the numbers are for the first stage (5 layers)" <<< "$table" ||
  fail "--pp 7 does not state the stage split: $table"
grep -qF "for 5 layer(s) x 7 micro-batch(es)" <<< "$table" || fail "--pp 7 reports a layer count that is not one: $table"
split=$("$calc" --pp 7 --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["pp_layer_split"])') ||
  fail "--pp 7 --json has no pp_layer_split"
[ "$split" = "32 layers over 7 stages: 4 × 5 + 3 × 4" ] || fail "pp_layer_split is '$split'"
echo "usp_calc_flags_act: ok"
