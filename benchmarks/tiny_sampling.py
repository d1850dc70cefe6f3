"""The tests' tiny model: sampling from random logits (the reference, final norm 1) against the
spread ones the tests use (`coopcode.models.tiny`, final norm 12), in one run.

    .venv/bin/python benchmarks/tiny_sampling.py [--problems 12] [--n 4] [--max-new-tokens 32]

Both models are written to a temporary folder, differing only in the final norm; each
generates n samples of the first --problems test-split prompts at temperature 0.8 (all in
flight), twice. Prints the seconds of the faster pass of each and the ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def timed(model: Path, problems: int, n: int, tokens: int) -> float:
    from coopcode.engines import GenerationRequest, SamplingParams, load_engine
    from coopcode.problems import load_humaneval

    engine = load_engine(str(model), dtype="float32")
    try:
        reqs = [GenerationRequest(p.prompt, SamplingParams(n=n, max_new_tokens=tokens, seed=1))
                for p in load_humaneval("test")[:problems]]
        best = float("inf")
        for _ in range(2):
            started = time.time()
            for sub in [engine.submit(r) for r in reqs]:
                sub.result(900)
            best = min(best, time.time() - started)
        return best
    finally:
        engine.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=12)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from coopcode.models.tiny import make_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        spread = make_tiny_model(Path(tmp) / "spread")
        flat = Path(tmp) / "flat"
        model = AutoModelForCausalLM.from_pretrained(str(spread), dtype=torch.float32)
        with torch.no_grad():
            model.model.norm.weight.fill_(1.0)  # the random model as initialised
        model.save_pretrained(str(flat))
        AutoTokenizer.from_pretrained(str(spread)).save_pretrained(str(flat))
        shape = (args.problems, args.n, args.max_new_tokens)
        reference = timed(flat, *shape)
        ours = timed(spread, *shape)
    print(f"{args.problems} prompts x {args.n} samples x {args.max_new_tokens} tokens: "
          f"final norm 1 (reference) {reference:.1f} s, final norm 12 (the tests') {ours:.1f} s, "
          f"{reference / ours:.2f}x")


if __name__ == "__main__":
    main()
