#!/usr/bin/env python3
"""Checks the C++ model against PyTorch autograd.

    torch_reference.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR is what dump_reference wrote for one model:
    config.json, model.safetensors      the checkpoint (Hugging Face Llama names and config)
    outputs.safetensors                 inputs, targets [B, T] i32; logits [B·T, V] f32;
                                        grad.<param name> f32 for every parameter
    outputs.json                        {"loss": <double>, ...}
The reference recomputes logits, loss and every gradient in float64 from the same checkpoint
and batch (tests/reference/llama_torch.py) and compares. Exit status: 0 all agree, 1 a
mismatch, 2 a missing or malformed input.

Metric, per tensor: max |ours - ref| / max |ref|  (the loss: |ours - ref| / |ref|).
Why: ours runs in fp32 (unit roundoff u = 6e-8) through two layers whose reductions are short
(hidden 64, ffn 160, T <= 32, vocab 256): rounding errors grow like sqrt(n)·u to n·u per
reduction, i.e. about 1e-7 to 1e-6 of the tensor's scale, and the float64 oracle adds ~1e-16.
Normalising by the tensor's largest magnitude (not element-wise) keeps entries that cancel to
near zero (common in gradients) from turning an absolute error of 1e-9 into a "relative" 1.
A real bug (a wrong sign, a transposed weight, an off-by-one position) gives O(1e-2) or more.
"""
import json
import os
import sys

TOLERANCE = 1e-5

try:
    import torch
except ImportError:
    print(f"error: PyTorch is not importable by {sys.executable}; run ./usp setup (it installs Debian's "
          "python3-torch for /usr/bin/python3) or point USP_TORCH_PYTHON at a python that has torch",
          file=sys.stderr)
    sys.exit(2)

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_torch  # noqa: E402
import safetensors_file  # noqa: E402


class InputError(Exception):
    pass


def need(path):
    if not os.path.isfile(path):
        raise InputError(f"missing {path} (did dump_reference run?)")
    return path


def relative_error(ours, ref):
    ours, ref = ours.to(torch.float64), ref.to(torch.float64)
    if ours.shape != ref.shape:
        return float("inf")
    scale = ref.abs().max().item()
    diff = (ours - ref).abs().max().item()
    return diff / scale if scale > 0 else diff


def compare_run(run_dir):
    """Prints the table for one run; returns the number of mismatches."""
    shape = llama_torch.LlamaShape.from_config_json(need(os.path.join(run_dir, "config.json")))
    weights = safetensors_file.load(need(os.path.join(run_dir, "model.safetensors")))
    outputs = safetensors_file.load(need(os.path.join(run_dir, "outputs.safetensors")))
    with open(need(os.path.join(run_dir, "outputs.json"))) as f:
        ours = json.load(f)
        our_loss, our_aux = float(ours["loss"]), float(ours.get("aux_loss", 0.0))

    expected = shape.param_shapes()
    if set(weights) != set(expected):
        raise InputError(f"{run_dir}/model.safetensors: tensors {sorted(set(weights) ^ set(expected))} "
                         "are missing or unexpected for this config")
    for name, s in expected.items():
        if tuple(weights[name].shape) != s:
            raise InputError(f"{name}: checkpoint shape {tuple(weights[name].shape)}, config says {s}")
    for name in ["inputs", "targets", "logits"] + [f"grad.{n}" for n in expected]:
        if name not in outputs:
            raise InputError(f"{run_dir}/outputs.safetensors has no tensor {name}")

    params = {n: w.to(torch.float64).requires_grad_(True) for n, w in weights.items()}
    inputs, targets = outputs["inputs"].long(), outputs["targets"].long()
    logits, loss, aux = llama_torch.forward(params, shape, inputs, targets)
    (loss + aux).backward()  # the objective: cross-entropy plus the experts' load-balancing loss

    rows = [("loss", (), abs(loss.item()), abs(our_loss - loss.item()) / abs(loss.item()))]
    if shape.experts:
        rows.append(("aux loss", (), abs(aux.item()), abs(our_aux - aux.item()) / abs(aux.item())))
    rows.append(("logits", tuple(logits.shape), logits.abs().max().item(),
                 relative_error(outputs["logits"], logits.detach())))
    for name in expected:
        ref = params[name].grad
        rows.append((f"grad {name}", tuple(ref.shape), ref.abs().max().item(),
                     relative_error(outputs[f"grad.{name}"], ref)))

    B, T = inputs.shape
    experts = f", {shape.experts} experts top-{shape.top_k}" if shape.experts else ""
    print(f"\n{run_dir}: {shape.layers} layers, hidden {shape.hidden}, heads {shape.heads}/{shape.kv_heads}, "
          f"ffn {shape.ffn}, vocab {shape.vocab}, {'tied' if shape.tied else 'untied'}{experts}; batch {B}x{T}; "
          f"loss ours {our_loss:.9f} torch {loss.item():.9f}")
    print(f"  {'tensor':<52} {'shape':<12} {'max|ref|':>10} {'rel.err':>10}  ")
    bad = 0
    for name, s, scale, err in rows:
        ok = err <= TOLERANCE
        bad += not ok
        print(f"  {name:<52} {'x'.join(map(str, s)) or '-':<12} {scale:10.3e} {err:10.2e}  {'ok' if ok else 'MISMATCH'}")
    return bad + compare_with_transformers(run_dir, inputs, logits.detach())


def compare_with_transformers(run_dir, inputs, ref_logits):
    """Optional: transformers' LlamaForCausalLM (MixtralForCausalLM for experts) loads the checkpoint as
    it is and agrees. Returns the number of mismatches (0 or 1)."""
    try:
        import transformers
    except ImportError:
        print("  transformers check: NOT RUN (transformers is not installed; optional)")
        return 0
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    arch = config["architectures"][0]
    if config.get("usp_capacity_factor", 0) > 0:
        print("  transformers check: NOT RUN (Mixtral routes dropless; this run drops assignments past a capacity)")
        return 0
    model = getattr(transformers, arch).from_pretrained(run_dir, torch_dtype=torch.float64)
    with torch.no_grad():
        hf_logits = model(input_ids=inputs).logits.reshape(ref_logits.shape)
    err = relative_error(hf_logits, ref_logits)
    # transformers builds its RoPE tables in fp32, so agreement is ~1e-7, not 1e-16.
    ok = err <= TOLERANCE
    print(f"  transformers check: {arch}.from_pretrained logits rel.err {err:.2e}  "
          f"{'ok' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(f"torch {torch.__version__} ({sys.executable}); tolerance: max|ours - ref| / max|ref| <= {TOLERANCE:g}")
    bad = 0
    try:
        for run_dir in argv[1:]:
            bad += compare_run(run_dir)
    except (InputError, OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"\n{'FAILED: ' + str(bad) + ' tensor(s) differ' if bad else 'all tensors agree with PyTorch'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
