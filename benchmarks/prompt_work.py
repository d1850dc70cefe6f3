"""The bench's prompt work: how much of it a longer-lived prefix cache or another step budget
could save.

    .venv/bin/python benchmarks/prompt_work.py [--problems 8] [--sizes 32,64,128,256,384,512,1024]

In one process, on the embedded 0.5B model:
1. the bench's kind of work (the first --problems test problems x n=10, `sequential`, T=0.8,
   384 tokens, through the scheduler, Docker or the process sandbox) while every prefill's
   prefix copy is watched: the prompt tokens copied from rows still in flight (what the
   engine does), and what an oracle could have copied from *any* earlier prompt of the same
   adapter (what a cache keeping freed rows' prefixes, as vLLM's automatic prefix caching,
   could at best add);
2. one forward of T tokens (the batch's kernels, the last position's logits) for each size:
   ms per token, the cost per token of a step's prompt chunk by the step's size.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import coopcode  # noqa: F401 - before torch: it sets how OpenMP threads wait

if TYPE_CHECKING:
    from coopcode.engines.embedded.engine import TransformersEngine


def prefix_oracle(engine: TransformersEngine, problems: int) -> None:
    from bench_throughput import ours  # this folder is on sys.path

    from coopcode.engines import SamplingParams, batching
    from coopcode.problems import load_humaneval
    from sandbox import open_sandbox

    seen: list[tuple[str | None, list[int]]] = []
    copied = {"from rows in flight": 0, "from any earlier prompt": 0}
    reuse = batching.ContinuousBatcher._reuse_prefix

    def watched(self: Any, pre: Any, held: Any) -> None:
        before = pre.done
        reuse(self, pre, held)
        best = 0
        for adapter, prompt in seen:
            if adapter == pre.adapter:
                n = min(len(prompt), len(pre.prompt) - 1)
                same = next((i for i in range(n) if prompt[i] != pre.prompt[i]), n)
                best = max(best, same)
        seen.append((pre.adapter, pre.prompt))
        copied["from rows in flight"] += pre.done - before
        copied["from any earlier prompt"] += max(best if best >= batching.MIN_SHARED else 0,
                                                  pre.done - before)

    batching.ContinuousBatcher._reuse_prefix = watched
    try:
        params = SamplingParams(max_new_tokens=384, temperature=0.8, seed=0)
        with open_sandbox() as sandbox:
            got = ours(engine, sandbox, load_humaneval("test")[:problems], "sequential", 10,
                       params, None)
    finally:
        batching.ContinuousBatcher._reuse_prefix = reuse
    work = engine.work_done()
    more = copied["from any earlier prompt"] - copied["from rows in flight"]
    print(f"{problems} problems x n=10, sequential: {got['samples']} samples in {got['wall']:.0f} s; "
          f"{len(seen)} prefills; prompt tokens computed {work['prompt_tokens']:,}, decoded "
          f"{work['decode_tokens']:,}; copied from rows in flight {copied['from rows in flight']:,}, "
          f"an oracle copying from any earlier prompt would copy {more:,} more")


def forward_sizes(engine: TransformersEngine, sizes: list[int], reps: int = 3) -> None:
    import torch

    from coopcode.engines.embedded.kernel_kinds import ForwardKind
    from coopcode.engines.embedded.kernels import on_kernels

    kernel = engine.kernels[ForwardKind.MANY][0]
    print(f"one forward of T tokens on the batch's kernels ({kernel}), "
          f"best of {reps}:")
    for n in sizes:
        ids = torch.zeros(1, n, dtype=torch.long)
        keep = torch.tensor([n - 1])
        with torch.inference_mode(), on_kernels(kernel, engine.kernel_weights):
            engine.base(input_ids=ids, use_cache=False, logits_to_keep=keep)
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                engine.base(input_ids=ids, use_cache=False, logits_to_keep=keep)
                best = min(best, time.perf_counter() - t0)
        print(f"T {n:5d}   {best * 1e3:7.0f} ms   {best * 1e3 / n:5.2f} ms a token")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=8)
    ap.add_argument("--sizes", default="32,64,128,256,384,512,1024")
    args = ap.parse_args()

    from coopcode.engines.embedded.engine import TransformersEngine

    engine = TransformersEngine(None)
    try:
        prefix_oracle(engine, args.problems)
        forward_sizes(engine, [int(s) for s in args.sizes.split(",")])
    finally:
        engine.close()


if __name__ == "__main__":
    main()
