"""Our decode loop vs the model's bare forward, by batch size: where the physical limit is.

    .venv/bin/python benchmarks/decode_batch.py [--batches 1,8,16,32,64] [--steps 48]

For each batch size B, in one process, interleaved:
- reference (the ceiling): B rows of one HumanEval prompt prefilled once, then `--steps`
  bare decode forwards of the model over its KV cache (no sampling, no stop checks, no text);
- ours: the engine sampling B samples of the same prompt (T=0.8, no stop strings) for the
  same number of tokens: prefill, per-row sampling, stop checks, streaming text;
- ours on plain weights: the same, with the forwards on the weights as stored (what the
  engine did before it measured copies of them faster: oneDNN for a batch instead of
  prepacked weights, torch's own kernels for one token instead of a bf16 copy; printed only
  where it chose a copy, `coopcode.engines.embedded.kernel_weights`).
Prints tokens/s for each and ours/reference: how much of the hardware's decode rate the
engine delivers at that batch size.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch


def bare_decode_rate(model: Any, ids: torch.Tensor, batch: int, steps: int) -> float:
    """Tokens/s of `model`'s bare decode forward: `ids` prefilled once, its KV cache repeated
    for `batch` rows, then `steps` decode forwards (after one untimed warm-up step)."""
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
        cache = out.past_key_values
        cache.batch_repeat_interleave(batch)
        token = out.logits[:, -1].argmax(-1).repeat(batch)[:, None]
        pos = ids.shape[1]
        model(input_ids=token, past_key_values=cache, use_cache=True,
              position_ids=torch.full((batch, 1), pos))
        t0 = time.perf_counter()
        for step in range(1, steps + 1):
            out = model(input_ids=token, past_key_values=cache, use_cache=True,
                        position_ids=torch.full((batch, 1), pos + step))
            cache = out.past_key_values
        return batch * steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,8,16,32,64")
    ap.add_argument("--steps", type=int, default=48)
    ap.add_argument("--model", default=None)
    args = ap.parse_args()

    from coopcode.engines import GenerationRequest, SamplingParams
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.engines.embedded.kernels import without_copies
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    batches = [int(b) for b in args.batches.split(",")]
    engine = TransformersEngine(args.model, max_batch=max(batches))
    problem = load_humaneval("test")[0]
    prompt = prompts.chat(engine.render_chat, prompts.single_message(problem)).text
    ids = torch.tensor([engine.encode(prompt)])
    print(f"model {engine.model_name}, dtype {engine.dtype}, threads {torch.get_num_threads()}, "
          f"prompt {ids.shape[1]} tokens, {args.steps} decode steps")
    engine.generate([GenerationRequest(prompt, SamplingParams(n=2, max_new_tokens=4))])  # warm-up

    shipped = dict(engine.kernels)
    print(f"kernels: one token {shipped['one'][0]}, a batch {shipped['many'][0]}")

    def rate(batch: int, kernels: dict[str, list[str]]) -> float:
        engine.kernels = kernels
        params = SamplingParams(n=batch, max_new_tokens=args.steps + 1, temperature=0.8, seed=1)
        t0 = time.perf_counter()
        got = engine.generate([GenerationRequest(prompt, params)])[0]
        return sum(c.n_tokens for c in got) / (time.perf_counter() - t0)

    for b in batches:
        ref = bare_decode_rate(engine.base, ids, b, args.steps)
        ours = rate(b, shipped)
        line = (f"batch {b:3d}: reference {ref:7.1f} tok/s   ours {ours:7.1f} tok/s   "
                f"ours/reference {ours / ref:.2f}")
        if {w for ways in shipped.values() for w in ways} & {"packed", "bf16"}:
            plain = rate(b, without_copies(shipped))
            line += f"   ours on plain weights {plain:7.1f} tok/s   copies/plain {ours / plain:.2f}"
        print(line)
    engine.close()  # its decode thread must leave torch before the interpreter does


if __name__ == "__main__":
    main()
