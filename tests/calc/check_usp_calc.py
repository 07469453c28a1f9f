#!/usr/bin/env python3
"""Checks usp_calc's command line: --json is one JSON object with the documented keys and the
worked numbers, the table prints every category, --sweep writes the CSV the plots read, and a
bad flag exits 2 with a single "error: ..." line.

    check_usp_calc.py BUILD/bin/usp_calc SCRATCH_DIR
"""
import csv
import json
import os
import subprocess
import sys

calc, scratch = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(*args):
    return subprocess.run([calc, *args], capture_output=True, text=True, timeout=30)


# --json: the playbook's 8B example.
r = run("--model", "llama3.1-8b", "--seq", "4096", "--mbs", "1", "--precision", "mixed", "--recompute", "none",
        "--json")
check(r.returncode == 0, f"--json exited {r.returncode}: {r.stderr}")
d = json.loads(r.stdout)
N = 8030261248
keys = ["parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "total_bytes",
        "num_parameters", "flops_per_step", "model", "seq", "mbs", "precision", "recompute", "dp", "zero", "tp",
        "sp", "cp", "pp", "ep"]
for k in keys:
    check(k in d, f"--json lacks {k}")
check(d["num_parameters"] == N, f"num_parameters {d['num_parameters']}")
check(d["activations_bytes"] == 104152956928, f"activations_bytes {d['activations_bytes']}")
check(d["parameters_bytes"] == 2 * N and d["gradients_bytes"] == 2 * N and d["optimizer_bytes"] == 12 * N,
      "mixed-precision states are not 2N, 2N, 12N")
check(d["total_bytes"] == 16 * N + 104152956928, "total_bytes is not the sum of the categories")
check(d["model"] == "llama3.1-8b" and d["seq"] == 4096 and d["precision"] == "mixed" and d["recompute"] == "none",
      "inputs not echoed")
check(d["flops_per_step"] == (6 * N + 12 * 32 * 4096 * 4096) * 4096, f"flops_per_step {d['flops_per_step']}")

# ZeRO-3 over 8 ranks in fp32 with an explicit shape (the 8B shape spelled out).
r = run("--layers", "32", "--hidden", "4096", "--heads", "32", "--kv-heads", "8", "--ffn", "14336", "--vocab",
        "128256", "--precision", "fp32", "--dp", "8", "--zero", "3", "--json")
check(r.returncode == 0, f"explicit shape exited {r.returncode}: {r.stderr}")
d = json.loads(r.stdout)
check(d["num_parameters"] == N, "explicit shape: wrong N")
check(d["parameters_bytes"] == 4 * N // 8 and d["gradients_bytes"] == 4 * N // 8 and
      d["optimizer_bytes"] == 8 * N // 8, "fp32 ZeRO-3 states are not (4N + 4N + 8N)/8")
check(d["activations_bytes"] == 2 * 104152956928, "fp32 activations are not twice the 16-bit ones")

# This course's exact layer count follows --tp / --sp: with SP every saved tensor is split, so
# the count at t = 8 is exactly 1/8 of t = 1's; at t = 16 the 70B's 8 kv heads cannot be split
# by the course's model, so the field is left out (not an error).
def course_count(*args):
    r = run("--model", "llama3.1-70b", "--seq", "4096", "--json", *args)
    check(r.returncode == 0, f"70B {args} exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout).get("course_layer_activation_bytes") if r.returncode == 0 else None


one, sp8, tp8 = course_count(), course_count("--tp", "8", "--sp"), course_count("--tp", "8")
check(one is not None and sp8 is not None and 8 * sp8 == one, f"course count: t = 1 {one}, t = 8 + SP {sp8}")
check(tp8 is not None and sp8 is not None and tp8 > sp8, f"course count: TP {tp8} not above TP + SP {sp8}")
check(course_count("--tp", "16", "--sp") is None, "course count given at t = 16 over 8 kv heads")

# The table: one line per category, in bytes and GiB.
r = run("--model", "llama3.1-70b", "--tp", "8", "--sp", "--recompute", "selective")
check(r.returncode == 0, f"table exited {r.returncode}: {r.stderr}")
for cat in ["parameters", "gradients", "optimizer", "activations", "total"]:
    check(any(line.split()[:1] == [cat] for line in r.stdout.splitlines()), f"table lacks a '{cat}' line")

# --list-models names every built-in model.
r = run("--list-models")
for name in ["llama3.2-1b", "llama3.2-3b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b", "usp-tiny"]:
    check(name in r.stdout, f"--list-models lacks {name}")

# --sweep: the CSV the plot scripts read.
path = os.path.join(scratch, "zero_memory.csv")
r = run("--sweep", "zero", "--csv", path)
check(r.returncode == 0, f"--sweep exited {r.returncode}: {r.stderr}")
with open(path, newline="") as f:
    rows = list(csv.DictReader(f))
check(len(rows) == 20, f"zero sweep has {len(rows)} rows")
check({int(x["zero"]) for x in rows} == {0, 1, 2, 3}, "zero sweep stages")
r = run("--sweep", "tp")
check(r.returncode == 0, f"--sweep tp exited {r.returncode}: {r.stderr}")
rows = list(csv.DictReader(r.stdout.splitlines()))
check(len(rows) == 25, f"tp sweep has {len(rows)} rows")
check({(int(x["tp"]), int(x["sp"])) for x in rows} == {(1, 0), (8, 0), (8, 1), (16, 0), (16, 1)}, "tp sweep layouts")

# --recipes: the playbook's six precision recipes, bytes per parameter and the model's total.
r = run("--model", "llama3.1-8b", "--recipes", "--json")
check(r.returncode == 0, f"--recipes exited {r.returncode}: {r.stderr}")
rec = json.loads(r.stdout) if r.returncode == 0 else {"recipes": [], "num_parameters": 0}
check([x["bytes_per_parameter"] for x in rec["recipes"]] == [20, 16, 16, 9, 15, 10], "recipes' bytes per parameter")
check(all(x["total_bytes"] == x["bytes_per_parameter"] * rec["num_parameters"] for x in rec["recipes"]),
      "recipes' totals = N × bytes per parameter")
r = run("--model", "llama3.1-8b", "--recipes")
check(r.returncode == 0 and "DeepSeek-V3" in r.stdout and "nanotron FP8" in r.stdout, "--recipes table")

# A bad value: exit 2, exactly one line, starting with "error:".
r = run("--tp", "3")
check(r.returncode == 2, f"bad --tp exited {r.returncode}")
check(r.stderr.strip().count("\n") == 0 and r.stderr.startswith("error: "), f"bad --tp stderr: {r.stderr!r}")
check(r.stdout == "", "bad --tp printed to stdout")

if failures:
    print("\n".join("FAIL: " + f for f in failures))
    sys.exit(1)
print("usp_calc command line: all checks passed")
