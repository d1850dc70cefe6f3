"""Does the embedded engine compute the model? Greedy tokens against the lone forward.

    .venv/bin/python benchmarks/greedy_agreement.py [--problems 8] [--max-new-tokens 96] [--alone]

The engine generates greedily for the first --problems test-split prompts (`single`), all in
flight together (flat forwards, shared batches; with `--alone` one after the other, so every
decode step is a one-token forward, on the kernels the engine measured for those: a bf16
copy of the weights where the model runs in a measured fp32); then each completion is
teacher-forced through the model's plain forward of the same weights, alone. Prints how many
generated tokens are that forward's argmax, and the largest logit gap where one is not.
"""

from __future__ import annotations

import argparse

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--alone", action="store_true", help="one prompt at a time (one-token forwards)")
    args = ap.parse_args()

    from coopcode.engines import GenerationRequest, SamplingParams, load_engine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    engine = load_engine(None, "transformers")
    texts = [prompts.chat(engine.render_chat, prompts.single_message(p)).text
             for p in load_humaneval("test")[:args.problems]]
    params = SamplingParams(n=1, max_new_tokens=args.max_new_tokens, temperature=0.0)
    if args.alone:
        out = [engine.generate([GenerationRequest(t, params)])[0] for t in texts]
    else:
        out = engine.generate([GenerationRequest(t, params) for t in texts])
    total = agree = 0
    worst = 0.0
    for text, (c,) in zip(texts, out):
        ids = engine.encode(text)
        with torch.inference_mode():
            logits = engine.base(torch.tensor([ids + c.token_ids])).logits[0].float()
        steps = logits[len(ids) - 1:len(ids) - 1 + len(c.token_ids)]
        gap = steps.max(-1).values - steps.gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
        total += len(gap)
        agree += int((gap == 0).sum())
        worst = max(worst, float(gap.max()))
    print(f"greedy, {len(texts)} test prompts x up to {args.max_new_tokens} tokens, "
          f"{'one at a time' if args.alone else 'all in flight'}, "
          f"{str(engine.dtype).replace('torch.', '')}, kernels {engine.kernels}: {agree}/{total} tokens are the lone "
          f"forward's argmax; largest logit gap {worst:.3f}")
    engine.close()


if __name__ == "__main__":
    main()
