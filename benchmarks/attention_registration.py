"""The engine's registered attention against plain SDPA, for forwards outside the decode loop.

    .venv/bin/python benchmarks/attention_registration.py [--reps 2]

The embedded engine sets the model's attention to its own name (`coop_slots`), which falls
back to transformers' SDPA for any call that is not a decode-loop step (training's log-probs,
say). One process, interleaved: 8 sequences of 400 tokens (4 left-padded by 100) through the
0.5B model under "sdpa" and under the registered name. Prints the seconds of each and
whether the logits are the same.
"""

from __future__ import annotations

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()

    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.engines.embedded.flat_step import ATTENTION, register_attention

    engine = TransformersEngine(None)
    model = engine.base
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 150000, (8, 400), generator=gen)
    mask = torch.ones_like(ids)
    mask[:4, :100] = 0
    register_attention()
    seconds: dict[str, list[float]] = {}
    logits: dict[str, torch.Tensor] = {}
    for _ in range(args.reps):
        for name in ("sdpa", ATTENTION):
            model.set_attn_implementation(name)
            with torch.inference_mode():
                t0 = time.perf_counter()
                logits[name] = model(input_ids=ids, attention_mask=mask).logits[:, -1].float()
                seconds.setdefault(name, []).append(time.perf_counter() - t0)
    for name, s in seconds.items():
        print(f"{name:<11} " + "  ".join(f"{x:.2f} s" for x in s))
    print(f"same logits: {bool(torch.equal(logits['sdpa'], logits[ATTENTION]))}")
    engine.close()


if __name__ == "__main__":
    main()
