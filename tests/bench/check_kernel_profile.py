#!/usr/bin/env python3
"""bench/kernel_profile.py against the H100 profile kept in data/: the families add up to the
kernel total the file's rows give (17,480 launches, 286.5 ms), cuBLAS's fp32 and 16-bit GEMMs land
in their own rows, and input that is not an ncu summary is refused with one line."""
import csv
import pathlib
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
tool = root / "bench" / "kernel_profile.py"
data = pathlib.Path(__file__).parent / "data" / "h100_124m_bf16_step.ncu.csv"


def run(*args):
    return subprocess.run([sys.executable, str(tool), *map(str, args)], capture_output=True, text=True)


failures = []
def check(ok, what):
    if not ok:
        failures.append(what)

# The oracle: the file's own rows, summed here without the tool's grouping.
rows = list(csv.reader(l for l in data.open() if l.startswith('"')))
h = rows[0]
calls, mean = h.index("Invocations"), h.index("Average")
launches = sum(int(r[calls]) for r in rows[1:])
ms = sum(int(r[calls]) * float(r[mean].replace(",", "")) for r in rows[1:]) / 1e6

r = run(data, "--step-ms", 309.1)
check(r.returncode == 0, f"kernel_profile exited {r.returncode}: {r.stderr}")
table = {l.split(" | ")[0].lstrip("| "): l.split(" | ")[1:] for l in r.stdout.splitlines() if l.startswith("| ")}
check(table.get("all", [""])[0] == f"{launches:,}", f"'all' launches {table.get('all')} != {launches:,}")
check(table.get("all", ["", ""])[1] == f"{ms:.1f}", f"'all' ms {table.get('all')} != {ms:.1f}")
rows_ms = sum(float(v[1]) for k, v in table.items() if k not in ("kernels", "---", "all"))
check(abs(rows_ms - ms) < 0.05 * len(table), f"the rows add to {rows_ms:.1f} ms, the total is {ms:.1f}")
fp32 = next((v for k, v in table.items() if k.startswith("GEMM, CUDA cores")), None)
tc = next((v for k, v in table.items() if k.startswith("GEMM, tensor cores")), None)
check(fp32 is not None and fp32[0] == "11,738", f"fp32 GEMM row {fp32} (expected 11,738 launches)")
check(tc is not None and tc[0] == "85", f"tensor-core GEMM row {tc} (expected 85 launches: the forward's linears)")
check("rmsnorm_dw_kernel" in table and table["rmsnorm_dw_kernel"][0] == "25", "rmsnorm_dw_kernel row")
check("(93 %): the GPU is the limit" in r.stdout, "the step-time line: " + r.stdout.splitlines()[-1])

bad = run(root / "README.md")
check(bad.returncode != 0 and "not an ncu per-kernel summary" in bad.stderr and bad.stderr.count("\n") == 1,
      f"a file that is not a summary: rc {bad.returncode}, stderr {bad.stderr!r}")

for f in failures:
    print("bench_kernel_profile: FAILED:", f)
print("bench_kernel_profile:", "failed" if failures else "passed")
sys.exit(1 if failures else 0)
