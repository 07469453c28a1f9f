#!/usr/bin/env python3
"""usp_sample's greedy tokens against PyTorch: the repository's own Llama in float64 (llama_torch.py),
run over the whole sequence at every step with no cache, takes the argmax of the last position; the
tokens must be the same. Where transformers is installed, its generate(do_sample=False) on the same
checkpoint must give them too (else that half says NOT RUN: transformers is optional).

    generation_reference.py CHECKPOINT_DIR USP_SAMPLE_JSON

The JSON is usp_sample's --json output for --temperature 0 on that checkpoint. Exit 1 on a mismatch.
A position where float64's two best logits are closer than fp32 can resolve (1e-4) is reported and
not counted: usp_sample computes in fp32, and a near tie may go either way there."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_torch  # noqa: E402
import safetensors_file  # noqa: E402

NEAR_TIE = 1e-4


def main(ckpt, sample_json):
    with open(sample_json) as f:
        got = json.load(f)
    if got.get("temperature") != 0:
        sys.exit(f"{sample_json}: usp_sample ran with temperature {got.get('temperature')}; this check needs 0")
    shape = llama_torch.LlamaShape.from_config_json(os.path.join(ckpt, "config.json"))
    params = {k: v.to(torch.float64) for k, v in safetensors_file.load(os.path.join(ckpt, "model.safetensors")).items()}
    tokens = list(got["prompt"].encode("utf-8"))
    ours = got["tokens"]
    failures, ties = 0, 0
    with torch.no_grad():
        for i, token in enumerate(ours):
            logits, _, _ = llama_torch.forward(params, shape, torch.tensor([tokens]))
            last = logits[-1]
            top2 = torch.topk(last, 2)
            best = int(top2.indices[0])
            if best != token:
                gap = float(top2.values[0] - top2.values[1])
                if gap < NEAR_TIE and token == int(top2.indices[1]):
                    ties += 1
                    print(f"  token {i}: a near tie (gap {gap:.1e}); ours {token}, float64 {best}: not counted")
                else:
                    failures += 1
                    print(f"  token {i}: ours {token}, the reference's argmax {best} (gap {gap:.3g}): MISMATCH")
                    break  # the sequences diverge from here
            tokens.append(token)
    print(f"generation_reference: {len(ours)} greedy tokens against llama_torch.py's argmax over the whole "
          f"sequence: {'ok' if failures == 0 else 'MISMATCH'} ({ties} near ties)")
    try:
        import transformers
    except ImportError:
        print("generation_reference: transformers check NOT RUN (transformers is not installed; optional)")
        return 1 if failures else 0
    with open(os.path.join(ckpt, "config.json")) as f:
        arch = json.load(f)["architectures"][0]
    model = getattr(transformers, arch).from_pretrained(ckpt, torch_dtype=torch.float64)
    prompt = torch.tensor([list(got["prompt"].encode("utf-8"))])
    with torch.no_grad():
        out = model.generate(prompt, do_sample=False, max_new_tokens=len(ours), min_new_tokens=len(ours),
                             pad_token_id=0, eos_token_id=None)
    hf = out[0, prompt.shape[1]:].tolist()
    same = hf == ours
    print(f"generation_reference: transformers {arch}.generate(do_sample=False): {'ok' if same else 'MISMATCH'}")
    if not same:
        first = next(i for i, (a, b) in enumerate(zip(hf, ours)) if a != b)
        print(f"  first difference at token {first}: transformers {hf[first]}, ours {ours[first]}")
    return 1 if failures or not same else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
