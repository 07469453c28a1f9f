#!/usr/bin/env python3
"""PyTorch's side of bench/compare_torch.sh: tokens per second of training steps (zero_grad,
forward, backward, AdamW step) of the same model as bench_train_throughput, with the same flags,
batch shape and optimizer hyperparameters, eager or under torch.compile (--compile), on the CPU
or a GPU (--device cuda: each step ends with torch.cuda.synchronize()). --precision bf16 is
PyTorch's usual mixed precision: fp32 weights and Adam states, the forward under
torch.autocast(bfloat16). The model is the one the reference test checks ours against
(tests/reference/llama_torch.py).

The summary ends in `tokens_per_second <value>` (wall clock), `cpu_tokens_per_second <value>`
(process CPU time, all threads) and, with --peak-tflops, `mfu <value>` (6·N per token plus
attention's 12·L·h·T per token — the count bench_train_throughput's ops make — over the peak),
as bench_train_throughput's; or one JSON object with --json.
"""
import contextlib
import argparse
import json
import os
import sys
import time

try:
    import torch
except ImportError:
    print(f"error: PyTorch is not importable by {sys.executable}; run ./usp setup (Debian's python3-torch "
          "for /usr/bin/python3) or use a python that has torch", file=sys.stderr)
    sys.exit(2)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
import llama_torch  # noqa: E402

VOCAB = 256  # byte-level, as bench_train_throughput (the synthetic corpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--ffn", type=int, default=768)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--vocab", type=int, default=VOCAB)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--compile", action="store_true", help="torch.compile the forward")
    ap.add_argument("--peak-tflops", type=float, default=0.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.steps < 1 or a.hidden % a.heads or a.heads % a.kv_heads:
        ap.error("need steps >= 1, heads dividing hidden and kv-heads dividing heads")

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)
    shape = llama_torch.LlamaShape(vocab=a.vocab, hidden=a.hidden, layers=a.layers, heads=a.heads,
                                   kv_heads=a.kv_heads, ffn=a.ffn, tied=a.tied)
    # Same initialisation rule as ParamStore::init: N(0, 0.02²) weights, norms at 1.
    params = {n: (torch.ones(s, device=device) if n.endswith("norm.weight")
                  else torch.randn(s, device=device) * 0.02).requires_grad_(True)
              for n, s in shape.param_shapes().items()}
    # Same hyperparameters as AdamWConfig{}; norm weights get no weight decay, as in ours.
    decayed = [p for n, p in params.items() if not n.endswith("norm.weight")]
    norms = [p for n, p in params.items() if n.endswith("norm.weight")]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.1}, {"params": norms, "weight_decay": 0.0}],
                                  lr=3e-3, betas=(0.9, 0.95), eps=1e-8)
    n_params = sum(p.numel() for p in params.values())
    forward = torch.compile(llama_torch.forward) if a.compile else llama_torch.forward
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if a.precision == "bf16" \
        else contextlib.nullcontext
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    # Model FLOPs per step: 6 per parameter of the matmuls and token (the embedding gathers), and
    # attention's q·kᵀ and P·v, 2·2·T·h each per token and layer, times 3 for forward + backward.
    matmul_params = n_params - shape.vocab * a.hidden * (0 if a.tied else 1) - (2 * a.layers + 1) * a.hidden
    flops_per_step = a.batch * a.seq * (6 * matmul_params + 12 * a.layers * a.seq * a.hidden)
    if not a.json:
        print(f"train_throughput_torch: torch {torch.__version__}, {torch.get_num_threads()} thread(s), "
              f"L={a.layers} h={a.hidden} a={a.heads} g={a.kv_heads} f={a.ffn} v={a.vocab}, {n_params} parameters, "
              f"{a.precision} on {device}{', compiled' if a.compile else ''}, "
              f"batch {a.batch} x {a.seq} tokens, {a.warmup} warmup + {a.steps} timed steps")

    seconds, cpu_seconds, loss = [], 0.0, None
    for s in range(a.warmup + a.steps):
        tokens = torch.randint(0, VOCAB, (a.batch, a.seq + 1), device=device)
        inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        sync()
        start, cpu_start = time.perf_counter(), time.process_time()
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            _, loss, _ = forward(params, shape, inputs, targets)
        loss.backward()
        optimizer.step()
        sync()
        dt, cpu_dt = time.perf_counter() - start, time.process_time() - cpu_start
        if s < a.warmup:
            continue
        cpu_seconds += cpu_dt
        seconds.append(dt)
        if not a.json:
            print(f"  step {s - a.warmup:3d}  loss {loss.item():.4f}  {dt * 1e3:.1f} ms")

    median = sorted(seconds)[len(seconds) // 2]
    tokens_per_second = a.batch * a.seq * a.steps / sum(seconds)
    cpu_tokens_per_second = a.batch * a.seq * a.steps / cpu_seconds
    mfu = flops_per_step * a.steps / sum(seconds) / (a.peak_tflops * 1e12) if a.peak_tflops > 0 else 0.0
    if a.json:
        print(json.dumps({"implementation": "torch", "torch": torch.__version__, "threads": torch.get_num_threads(),
                          "parameters": n_params, "batch": a.batch, "seq": a.seq, "steps": a.steps,
                          "final_loss": loss.item(), "median_step_seconds": median,
                          "tokens_per_second": tokens_per_second,
                          "cpu_tokens_per_second": cpu_tokens_per_second, "mfu": mfu}))
    else:
        print(f"median step {median * 1e3:.1f} ms, mean {sum(seconds) / len(seconds) * 1e3:.1f} ms")
        print(f"tokens_per_second {tokens_per_second:.1f}")
        print(f"cpu_tokens_per_second {cpu_tokens_per_second:.1f}")
        if a.peak_tflops > 0:
            print(f"mfu {mfu:.4f}")


if __name__ == "__main__":
    main()
