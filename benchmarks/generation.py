"""Batched sampling (ours) vs a per-sample `generate` loop, same model, n and token budget.

    .venv/bin/python benchmarks/generation.py [--n 8] [--max-new-tokens 128] [--model NAME]

Both sides sample n completions of one HumanEval prompt at temperature 0.8, top-p 0.95, with
the same token budget and no stop strings; the reference calls `model.generate` once per
sample (what a simple harness or the reference trainer does). Prints samples/s and
tokens/s for each and the ratio. Target: ours >= 4x samples/s.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--model", default=None)
    ap.add_argument("--task", default="HumanEval/0")
    args = ap.parse_args()

    from coopcode.engines import GenerationRequest, SamplingParams
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    problem = next(p for p in load_humaneval("all") if p.task_id == args.task)
    engine = TransformersEngine(args.model)
    prompt = prompts.chat(engine.render_chat, prompts.single_message(problem)).text
    print(f"model {engine.model_name}, dtype {engine.dtype}, threads {torch.get_num_threads()}, "
          f"n={args.n}, max_new_tokens={args.max_new_tokens}")

    # Warm-up: first calls pay for allocations and kernel selection.
    engine.generate([GenerationRequest(prompt, SamplingParams(n=2, max_new_tokens=8))])

    # Reference: one generate() per sample.
    tok, model = engine.tokenizer, engine.base
    enc = tok([prompt], return_tensors="pt", add_special_tokens=False)
    t0 = time.perf_counter()
    ref_tokens = 0
    for i in range(args.n):
        torch.manual_seed(i)
        with torch.inference_mode():
            out = model.generate(**enc, do_sample=True, temperature=0.8, top_p=0.95, top_k=0,
                                 max_new_tokens=args.max_new_tokens, pad_token_id=tok.pad_token_id)
        ref_tokens += out.shape[1] - enc["input_ids"].shape[1]
    ref_s = time.perf_counter() - t0

    # Ours: one batched call for all n samples.
    t0 = time.perf_counter()
    ours = engine.generate([GenerationRequest(prompt, SamplingParams(
        n=args.n, max_new_tokens=args.max_new_tokens, temperature=0.8, top_p=0.95, seed=0))])[0]
    our_s = time.perf_counter() - t0
    our_tokens = sum(c.n_tokens for c in ours)

    print(f"reference (loop of generate): {args.n / ref_s:6.3f} samples/s  "
          f"{ref_tokens / ref_s:7.1f} tokens/s  ({ref_s:.1f} s, {ref_tokens} tokens)")
    print(f"coopcode (batched):           {args.n / our_s:6.3f} samples/s  "
          f"{our_tokens / our_s:7.1f} tokens/s  ({our_s:.1f} s, {our_tokens} tokens)")
    print(f"ratio samples/s: {ref_s / our_s:.2f}x   ratio tokens/s: "
          f"{(our_tokens / our_s) / (ref_tokens / ref_s):.2f}x")


if __name__ == "__main__":
    main()
