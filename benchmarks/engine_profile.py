"""Where the embedded engine's time goes on bench work: the model's forward vs the loop.

    .venv/bin/python benchmarks/engine_profile.py [--problems 3] [--step-tokens 256]

The first --problems test-split problems, `sequential`, n=10, T=0.8, 384 tokens per agent,
through the scheduler (no sandbox: generation only). Prints the wall time, the time inside
the forwards, the tokens they held, and the prompt tokens prefilled, decoded and copied from
another row's cache (`TransformersEngine.work_done`).
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=3)
    ap.add_argument("--step-tokens", type=int, default=256)
    args = ap.parse_args()

    from coopcode.collaboration.scheduler import Scheduler, sample_specs
    from coopcode.engines import SamplingParams, load_engine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import get_scheme

    engine: Any = load_engine(None, "transformers")
    batcher = engine.batcher()
    batcher.step_tokens = args.step_tokens
    inside = {"seconds": 0.0, "forwards": 0, "tokens": 0}
    forward = batcher.forward

    def timed(plan: Any, adapters: Any, tokens: list[int], positions: Any, keep: Any) -> Any:
        t0 = time.perf_counter()
        out = forward(plan, adapters, tokens, positions, keep)
        inside["seconds"] += time.perf_counter() - t0
        inside["forwards"] += 1
        inside["tokens"] += len(tokens)
        return out

    batcher.forward = timed
    params = SamplingParams(max_new_tokens=384, temperature=0.8, seed=0)
    specs = [s for p in load_humaneval("test")[:args.problems]
             for s in sample_specs(p, get_scheme("sequential"), range(10), params)]
    t0 = time.perf_counter()
    stats = Scheduler(engine, None, concurrency=64).run(specs, lambda s, v: None)
    wall = time.perf_counter() - t0
    work = engine.work_done()
    print(f"step budget {args.step_tokens}: wall {wall:.1f} s, inside the forwards "
          f"{inside['seconds']:.1f} s ({inside['seconds'] / wall:.0%}), {inside['forwards']} "
          f"forwards holding {inside['tokens']:,} tokens; generated {stats.tokens:,} "
          f"({stats.tokens / wall:.1f} tok/s); prompt tokens prefilled {work['prompt_tokens']:,}, "
          f"copied {work['reused_tokens']:,}, decode tokens {work['decode_tokens']:,}")
    engine.close()


if __name__ == "__main__":
    main()
