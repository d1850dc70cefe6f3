"""Bench throughput: the scheduler (many problems in flight) vs the ways we ran before.

    .venv/bin/python benchmarks/bench_throughput.py [--part greedy|sampled|both|vllm|kernels] [--reps 2]
        [--max-new-tokens 384] [--max-batch 64] [--engine transformers|openai --base-url URL]

Same engine, same problems, same seeds, in one process, the two sides interleaved
(reference, ours, reference, ours) so a noisy machine hits both alike:
- greedy: 16 test-split problems, `single`, n=1, temperature 0. Reference: one sample at a
  time (`--concurrency 1`, which is what every job did before for n=1). Target >= 3x.
- sampled: 8 problems, `sequential`, n=10, T=0.8. Reference: the previous bench loop, one
  problem at a time: its 10 helpers together, then its 10 mains, then its 10 programs in the
  sandbox while the engine waits. Target >= 1.5x.
For each side: samples/s, and the share of wall time the engine sat idle waiting for the
sandbox (target under 5% for ours). Both sides execute every program in the sandbox.
- vllm: the sampled work through the scheduler on `vllm serve` (vLLM's CPU build from
  .venv-vllm, the same model and prompts, the OpenAI-compatible engine) vs on the embedded
  engine, at the same concurrency. Goal: the embedded engine at least as fast.
- kernels: the same sampled work through the scheduler on the embedded engine, its batch's
  forwards on the plain weights (what it ran before) vs on the kernels it measured fastest
  (copies of the weights where it chose them: oneDNN's prepacked ones, a bf16 copy for one token), interleaved, `--reps` times each.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from coopcode.collaboration.scheduler import Scheduler, sample_specs
from coopcode.engines import Engine, SamplingParams
from coopcode.problems import Problem, load_humaneval
from coopcode.schemes import SampleState, get_scheme
from sandbox import Job, Sandbox, open_sandbox

if TYPE_CHECKING:
    from coopcode.engines.embedded.engine import TransformersEngine

CONCURRENCY: int | None = None  # --concurrency (None: what fills the engine)


def hidden_test_job(problem: Problem, attempt: Any, timeout: float) -> Job:
    """The program against the hidden tests (what both sides time: no helper-alone runs)."""
    return Job(program=attempt.program.text if attempt.program else "", tests=problem.tests,
               entry_point=problem.entry_point, timeout=timeout)


def ours(engine: Engine, sandbox: Sandbox, problems: list[Problem], scheme: str, n: int,
         params: SamplingParams, concurrency: int | None) -> dict[str, Any]:
    specs = [s for p in problems for s in sample_specs(p, get_scheme(scheme), range(n), params)]
    passed: list[bool] = []
    t0 = time.perf_counter()
    stats = Scheduler(engine, sandbox, concurrency=concurrency).run(
        specs, lambda s, v: passed.append(bool(v and v[0].passed)),
        final_jobs=lambda s: [hidden_test_job(s.problem, s.attempt, 5.0)])
    wall = time.perf_counter() - t0
    return {"wall": wall, "samples": len(passed), "passed": sum(passed), "tokens": stats.tokens,
            "idle_on_sandbox": stats.engine_idle_on_sandbox}


def per_problem(engine: Engine, sandbox: Sandbox, problems: list[Problem], scheme: str, n: int,
                params: SamplingParams) -> dict[str, Any]:
    """The loop bench ran before: generate one problem's n samples, then run them."""
    passed: list[bool] = []
    tokens, idle = 0, 0.0
    t0 = time.perf_counter()
    for p in problems:
        states: list[SampleState] = []
        specs = sample_specs(p, get_scheme(scheme), range(n), params)
        tokens += Scheduler(engine, concurrency=n).run(specs, lambda s, _v, _to=states: _to.append(s)).tokens
        t1 = time.perf_counter()
        verdicts = sandbox.run_many([hidden_test_job(p, s.attempt, 5.0) for s in states])
        idle += time.perf_counter() - t1
        passed += [v.passed for v in verdicts]
    wall = time.perf_counter() - t0
    return {"wall": wall, "samples": len(passed), "passed": sum(passed), "tokens": tokens,
            "idle_on_sandbox": idle}


def show(name: str, r: dict[str, Any]) -> str:
    return (f"{name:<28} {r['samples'] / r['wall']:7.3f} samples/s  {r['tokens'] / r['wall']:6.1f} tok/s"
            f"  {r['wall']:7.1f} s  passed {r['passed']}/{r['samples']}"
            f"  engine idle on sandbox {100 * r['idle_on_sandbox'] / r['wall']:4.1f}%")


def part(name: str, engine: Engine, sandbox: Sandbox, reps: int, problems: list[Problem],
         scheme: str, n: int, params: SamplingParams, reference: str) -> None:
    print(f"\n== {name}: {len(problems)} problems x n={n}, {scheme}, T={params.temperature}, "
          f"max_new_tokens={params.max_new_tokens}; reference: {reference}")
    ratios = []
    for rep in range(reps):
        if reference == "concurrency 1":
            ref = ours(engine, sandbox, problems, scheme, n, params, concurrency=1)
        else:
            ref = per_problem(engine, sandbox, problems, scheme, n, params)
        new = ours(engine, sandbox, problems, scheme, n, params, concurrency=CONCURRENCY)
        print(show(f"[{rep + 1}] reference", ref))
        print(show(f"[{rep + 1}] scheduler", new))
        ratios.append((new["samples"] / new["wall"]) / (ref["samples"] / ref["wall"]))
        print(f"[{rep + 1}] ratio samples/s: {ratios[-1]:.2f}x")
    print(f"{name}: ratio per rep {', '.join(f'{r:.2f}x' for r in ratios)}")


def vllm_part(args: Any) -> None:
    import tempfile
    from pathlib import Path

    from coopcode.engines import load_engine
    from coopcode.engines.served.vllm_server import VLLMServer
    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir

    problems = load_humaneval("test")[:8]
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.8, seed=0)
    concurrency = args.concurrency or 64
    print(f"\n== vllm: 8 problems x n=10, sequential, T=0.8, max_new_tokens={args.max_new_tokens}, "
          f"concurrency {concurrency}")
    results = {}
    with open_sandbox(args.sandbox, warn=print) as sb:
        log = Path(tempfile.mkdtemp()) / "serve.log"
        server = VLLMServer(model_dir(CATALOG[DEFAULT_MODEL]), DEFAULT_MODEL, log, kv_cache_gb=4)
        try:
            t0 = time.perf_counter()
            server.wait_ready()
            print(f"vllm serve ready in {time.perf_counter() - t0:.0f} s")
            served = load_engine(None, "openai", base_urls=[server.url], max_inflight=concurrency)
            ours(served, sb, problems[:1], "single", 1, SamplingParams(max_new_tokens=8), None)
            results["vllm serve"] = ours(served, sb, problems, "sequential", 10, params, concurrency)
            served.close()
        finally:
            server.stop()
        embedded = load_engine(None, "transformers", **({"max_batch": args.max_batch} if args.max_batch else {}))
        ours(embedded, sb, problems[:1], "single", 1, SamplingParams(max_new_tokens=8), None)
        before = embedded.work_done()
        results["embedded"] = ours(embedded, sb, problems, "sequential", 10, params, concurrency)
        work = {k: v - before[k] for k, v in embedded.work_done().items()}
        embedded.close()
        wall = results["embedded"]["wall"]
        print(f"embedded forwards: {work['forwards']}, prompt tokens prefilled "
              f"{work['prompt_tokens']:,}, decode tokens {work['decode_tokens']:,}: "
              f"{(work['prompt_tokens'] + work['decode_tokens']) / wall:.0f} tokens/s through "
              "the model in all")
    for name, r in results.items():
        print(show(name, r))
    rate = {k: r["samples"] / r["wall"] for k, r in results.items()}
    print(f"vllm: embedded / vllm serve samples/s: {rate['embedded'] / rate['vllm serve']:.2f}x")


def kernels_part(engine: TransformersEngine, sandbox: Sandbox, reps: int, max_new_tokens: int) -> None:
    """The bench's kind of work with the batch's forwards on plain weights, then as shipped."""
    from coopcode.engines.embedded.kernels import without_copies

    shipped = dict(engine.kernels)
    plain = without_copies(shipped)
    problems = load_humaneval("test")[:8]
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.8, seed=0)
    print(f"\n== kernels: 8 problems x n=10, sequential, T=0.8; shipped {shipped}, reference {plain}")
    ratios = []
    for rep in range(reps):
        got = {}
        for name, kernels in (("plain weights", plain), ("as shipped", shipped)):
            engine.kernels = kernels
            got[name] = ours(engine, sandbox, problems, "sequential", 10, params, CONCURRENCY)
            print(show(f"[{rep + 1}] {name}", got[name]))
        ratios.append((got["as shipped"]["tokens"] / got["as shipped"]["wall"])
                      / (got["plain weights"]["tokens"] / got["plain weights"]["wall"]))
        print(f"[{rep + 1}] ratio tokens/s: {ratios[-1]:.2f}x")
    engine.kernels = shipped
    print(f"kernels: ratio per rep {', '.join(f'{r:.2f}x' for r in ratios)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("greedy", "sampled", "both", "vllm", "kernels"), default="both")
    ap.add_argument("--concurrency", type=int, default=None)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=384)
    ap.add_argument("--max-batch", type=int, default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument("--engine", default="transformers")
    ap.add_argument("--base-url", action="append", default=None)
    ap.add_argument("--sandbox", default="auto")
    args = ap.parse_args()

    from coopcode.engines import load_engine

    if args.part == "vllm":
        vllm_part(args)
        return
    global CONCURRENCY
    CONCURRENCY = args.concurrency
    kw: dict[str, Any] = {}
    if args.max_batch:
        kw["max_batch"] = args.max_batch
    if args.base_url:
        kw["base_urls"] = args.base_url
    engine = load_engine(args.model, args.engine, **kw)
    test = load_humaneval("test")
    with open_sandbox(args.sandbox, warn=print) as sb:
        print(f"engine {engine.name} ({engine.model_name}), max_batch "
              f"{getattr(engine, 'max_batch', '-')}, concurrency {engine.preferred_concurrency}, "
              f"sandbox {sb.name}")
        # Warm-up: the first calls pay for allocations and kernel selection.
        ours(engine, sb, test[:2], "single", 2, SamplingParams(max_new_tokens=8), None)
        if args.part in ("greedy", "both"):
            part("greedy", engine, sb, args.reps, test[:16], "single", 1,
                 SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0),
                 "concurrency 1")
        if args.part == "kernels":
            from coopcode.engines.embedded.engine import TransformersEngine

            assert isinstance(engine, TransformersEngine), "--part kernels measures the embedded engine"
            kernels_part(engine, sb, args.reps, args.max_new_tokens)
        if args.part in ("sampled", "both"):
            part("sampled", engine, sb, args.reps, test[:8], "sequential", 10,
                 SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.8, seed=0),
                 "one problem at a time")
    engine.close()


if __name__ == "__main__":
    main()
