#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention beside chapter 12's CUDA ladder.

Reads the gpu_ladder.csv that ch12_flash_attention writes on a machine with a GPU (each rung's
shape, time and TFLOP/s), times torch.nn.functional.scaled_dot_product_attention on the same
causal problem — fp32 (the ladder's precision) and bf16 — forward, and forward + backward (the
backward's time is the difference), and prints every rung's TFLOP/s with its share of SDPA's in
the same precision. FLOPs are counted as the ladder counts them: 2·B·H·T²·D for a causal forward,
2.5 times that for a backward.

    python3 bench/attention_sdpa.py --ladder out/12_flash_attention/gpu_ladder.csv [--reps 10]
"""
import argparse
import csv
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit("attention_sdpa: PyTorch is not importable; run it where torch is installed")


def median_ms(fn, reps):
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


def sdpa_ms(B, T, H, G, D, dtype, reps):
    """Forward and backward milliseconds of causal SDPA, [B, H, T, D] layout, kv heads repeated."""
    dev = torch.device("cuda")
    q = torch.randn(B, H, T, D, device=dev, dtype=dtype, requires_grad=True)
    k = torch.randn(B, G, T, D, device=dev, dtype=dtype, requires_grad=True)
    v = torch.randn(B, G, T, D, device=dev, dtype=dtype, requires_grad=True)
    dout = torch.randn(B, H, T, D, device=dev, dtype=dtype)

    def forward():
        kk, vv = k.repeat_interleave(H // G, dim=1), v.repeat_interleave(H // G, dim=1)
        return F.scaled_dot_product_attention(q, kk, vv, is_causal=True)

    def both():
        forward().backward(dout)

    with torch.no_grad():
        forward()  # warm-up
    both()
    with torch.no_grad():
        fwd = median_ms(forward, reps)
    total = median_ms(both, reps)
    return fwd, max(total - fwd, 1e-6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ladder", required=True, help="gpu_ladder.csv from ch12_flash_attention")
    ap.add_argument("--reps", type=int, default=10)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("attention_sdpa: no CUDA device visible to PyTorch")
    try:
        with open(a.ladder, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"attention_sdpa: {a.ladder}: {e.strerror} (run ch12_flash_attention on a GPU first)")
    if not rows:
        sys.exit(f"attention_sdpa: {a.ladder} has no rows")
    B, T, H, G, D = (int(rows[0][c]) for c in ("batch", "seq", "heads", "kv_heads", "head_dim"))
    flops = 4.0 * B * H * T * T * D / 2.0
    print(f"causal attention B {B}, T {T}, H {H} on G {G}, D {D}; {torch.cuda.get_device_name()}, torch {torch.__version__}")
    sdpa = {}
    for name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        fwd, bwd = sdpa_ms(B, T, H, G, D, dtype, a.reps)
        sdpa[name] = (flops / (fwd * 1e9), 2.5 * flops / (bwd * 1e9))
        print(f"  SDPA {name}: forward {fwd:.3f} ms ({sdpa[name][0]:.1f} TFLOP/s), "
              f"backward {bwd:.3f} ms ({sdpa[name][1]:.1f} TFLOP/s)")
    print(f"  {'rung':<34} {'TFLOP/s':>8} {'% of SDPA fp32':>15} {'% of SDPA bf16':>15}")
    for r in rows:
        tflops = float(r["tflops"])
        which = 1 if "backward" in r["rung"] else 0
        print(f"  {r['rung']:<34} {tflops:8.2f} {100 * tflops / sdpa['fp32'][which]:14.1f}% "
              f"{100 * tflops / sdpa['bf16'][which]:14.1f}%")


if __name__ == "__main__":
    main()
