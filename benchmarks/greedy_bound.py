"""Greedy problems in flight vs one at a time: where each side's forwards spend their time,
and the most the ratio could be on this machine if every compute-bound forward ran at the
machine's matrix-product peak (the issue's ">= 4x" target against its physical bound).

    .venv/bin/python benchmarks/greedy_bound.py [--problems 16] [--split test] [--max-new-tokens 384]
        [--emulate-avx2] [--spin] [--compare-few]

It runs under the OpenMP waiting every coopcode command runs under (`OMP_WAIT_POLICY=PASSIVE`,
set when coopcode is imported, before torch); before 2026-12-06 it imported torch first and
so ran under libgomp's default spin, which on a quiet 2-core Xeon made a batch's steps ~1.3x
faster than a `coopcode bench` gets (`--spin` measures that way).

One process, the embedded engine as shipped (its measured kernels), generation only (the
sandbox is left out: bench_throughput.py shows it overlapped, the engine idle on it 0.0%):
1. The peak: the best rate of the model's own products, a forward of 512 prompt tokens on the
   batch's kernels (its best shape: many rows), and of a square 2048 x 2048 product.
2. The same greedy work as `bench_throughput.py --part greedy` (the first --problems test
   problems, `single`, n=1, temperature 0), one at a time (`concurrency 1`) and then all in
   flight; every forward of the decode loop timed and sorted by kind: carrying prompt tokens,
   9 or more decoding rows, 2-8 (the fused step's), a single row. The matrix products' work of
   each (2 flops per weight per token; the vocabulary head only for the rows whose logits are
   kept; attention, a few percent at these lengths, not counted) over its time is its rate.
3. The bound: each side's forwards that are bound by compute (prompts, 2 or more rows) at the
   peak, its single-row steps as measured (bound by reading the weights, and already at that
   limit: BENCHMARKS.md "The fused one-token step"), nothing else; the ratio of the two.
"""

from __future__ import annotations

import argparse
import importlib
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coopcode.engines.embedded.engine import TransformersEngine

KINDS = ("prompt", "9+ rows", "5-8 rows", "2-4 rows", "1 row")


def kind_of(plan: Any, tokens: list[int]) -> str:
    if plan.chunks:
        return "prompt"
    n = len(tokens)
    return "1 row" if n == 1 else "2-4 rows" if n <= 4 else "5-8 rows" if n <= 8 else "9+ rows"


def product_weights(model: Any) -> tuple[int, int]:
    """Weights multiplied per token in the decoder layers, and in the vocabulary head."""
    import torch

    head = model.get_output_embeddings()
    layers = sum(m.weight.numel() for m in model.modules()
                 if isinstance(m, torch.nn.Linear) and m is not head)
    return layers, head.weight.numel()


def peak_rate(engine: TransformersEngine, layers: int, head: int) -> tuple[float, float]:
    """Flops/s of the model's forward of 512 tokens on the batch's kernels, and of a square
    2048 product in the model's format; best of 3 each."""
    import torch

    from coopcode.engines.embedded.kernel_kinds import ForwardKind
    from coopcode.engines.embedded.kernels import on_kernels

    def best(f: Any) -> float:
        f()
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            f()
            times.append(time.perf_counter() - t0)
        return min(times)

    ids = torch.zeros(1, 512, dtype=torch.long)
    with torch.inference_mode(), on_kernels(engine.kernels[ForwardKind.MANY][0], engine.kernel_weights):
        model_s = best(lambda: engine.base(input_ids=ids, use_cache=False, logits_to_keep=1))
    a = torch.randn(2048, 2048, dtype=engine.base.dtype)
    square_s = best(lambda: a @ a)
    return 2 * (512 * layers + head) / model_s, 2 * 2048 ** 3 / square_s


def run(engine: TransformersEngine, problems: list[Any], params: Any, concurrency: int | None,
        layers: int, head: int) -> dict[str, Any]:
    """The work through the scheduler, every forward timed and sorted by kind."""
    from coopcode.collaboration.scheduler import Scheduler, sample_specs
    from coopcode.schemes import get_scheme

    batcher = engine.batcher()
    seconds = dict.fromkeys(KINDS, 0.0)
    flops = dict.fromkeys(KINDS, 0.0)
    steps = dict.fromkeys(KINDS, 0)
    forward = batcher.forward

    def timed(plan: Any, adapters: Any, tokens: list[int], positions: Any, keep: Any) -> Any:
        t0 = time.perf_counter()
        out = forward(plan, adapters, tokens, positions, keep)
        kind = kind_of(plan, tokens)
        seconds[kind] += time.perf_counter() - t0
        flops[kind] += 2.0 * (layers * len(tokens) + head * len(keep))
        steps[kind] += 1
        return out

    batcher.forward = timed
    try:
        specs = [s for p in problems for s in sample_specs(p, get_scheme("single"), range(1), params)]
        t0 = time.perf_counter()
        stats = Scheduler(engine, None, concurrency=concurrency).run(specs, lambda s, v: None)
        wall = time.perf_counter() - t0
    finally:
        batcher.forward = forward
    return {"wall": wall, "tokens": stats.tokens, "seconds": seconds, "flops": flops, "steps": steps}


def bound(r: dict[str, Any], peak: float) -> float:
    """The side's least time: its compute-bound forwards at the peak, its lone rows as measured."""
    return sum(r["flops"][k] / peak for k in KINDS if k != "1 row") + r["seconds"]["1 row"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=16)
    ap.add_argument("--split", default="test", choices=["test", "train", "val"],
                    help="HumanEval split the first --problems come from (whole_commands.py's "
                         "bench: train, 8)")
    ap.add_argument("--max-new-tokens", type=int, default=384)
    ap.add_argument("--emulate-avx2", action="store_true", help="torch, oneDNN and MKL held to AVX2")
    ap.add_argument("--spin", action="store_true",
                    help="OpenMP's workers spin while they wait (libgomp's default: torch loaded "
                         "before coopcode), not coopcode's OMP_WAIT_POLICY=PASSIVE")
    ap.add_argument("--compare-few", action="store_true",
                    help="also run in flight with every few-row step on the batch's kernel (the "
                         "choice before the fused step's crossover was measured), alternating")
    args = ap.parse_args()
    if args.emulate_avx2:  # this folder is on sys.path
        from number_formats import rerun_held_to_avx2

        rerun_held_to_avx2()
    if args.spin:
        import torch  # noqa: F401  (libgomp reads its environment now: its default, spin then sleep)
    # coopcode before torch: OMP_WAIT_POLICY=PASSIVE, as every coopcode command runs (unless
    # torch came first, above)
    importlib.import_module("coopcode")
    import torch

    from coopcode.engines import SamplingParams, load_engine
    from coopcode.problems import load_humaneval

    engine: Any = load_engine(None, "transformers")
    problems = load_humaneval(args.split)[:args.problems]
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0)
    layers, head = product_weights(engine.base)
    run(engine, problems[:2], SamplingParams(max_new_tokens=8), None, layers, head)  # warm-up
    model_peak, square_peak = peak_rate(engine, layers, head)
    peak = max(model_peak, square_peak)
    print(f"model {engine.model_name}, {str(engine.dtype).replace('torch.', '')}, "
          f"{torch.get_num_threads()} threads, kernels {engine.kernels}, OpenMP workers "
          + ("spin (libgomp's default)" if args.spin else "passive (coopcode's OMP_WAIT_POLICY)"))
    print(f"peak: the model's forward of 512 tokens {model_peak / 1e9:.0f} GFLOP/s, a square 2048 "
          f"product {square_peak / 1e9:.0f} GFLOP/s; the bound uses {peak / 1e9:.0f}")
    print(f"few-row steps: up to {engine.few_rows} rows on {engine.kernels.get('few')}")
    sides = {"one at a time": run(engine, problems, params, 1, layers, head),
             "in flight": run(engine, problems, params, None, layers, head)}
    if args.compare_few and "few" in engine.kernels:
        measured = (engine.kernels["few"], engine.few_rows)
        engine.kernels["few"] = engine.kernels["many"]
        engine.few_rows = engine.kernel_weights.fused.max_rows
        sides["in flight, few rows on the batch's kernel"] = run(engine, problems, params, None, layers, head)
        engine.kernels["few"], engine.few_rows = measured
        sides["in flight again"] = run(engine, problems, params, None, layers, head)
    for name, r in sides.items():
        inside = sum(r["seconds"].values())
        print(f"\n{name}: wall {r['wall']:.1f} s, {r['tokens']:,} tokens ({r['tokens'] / r['wall']:.1f} "
              f"tok/s), inside forwards {inside:.1f} s; least time {bound(r, peak):.1f} s")
        for k in KINDS:
            if r["steps"][k]:
                s = r["seconds"][k]
                print(f"  {k:9s} {r['steps'][k]:5d} steps {s:6.1f} s ({1000 * s / r['steps'][k]:5.1f} ms "
                      f"a step)  {r['flops'][k] / s / 1e9:5.0f} GFLOP/s = {r['flops'][k] / s / peak:4.0%} "
                      "of the peak")
    one, many = sides["one at a time"], sides["in flight"]
    print(f"\nratio measured {one['wall'] / many['wall']:.2f}x; if every compute-bound forward ran "
          f"at the peak: in flight alone faster {one['wall'] / bound(many, peak):.2f}x, both sides "
          f"{bound(one, peak) / bound(many, peak):.2f}x")
    engine.close()


if __name__ == "__main__":
    main()
