"""Training steps: a rollout batch of several problems vs one problem per step, and who samples.

    .venv/bin/python benchmarks/train_rollout.py [--part batch|vllm|both] [--problems 4] [-G 4]
                                                 [--max-new-tokens 256]

The embedded 0.5B pair (MAGRPO, sequential, the execution reward in the sandbox), the same
problems (the first --problems of the HumanEval train split), G and seed on both sides:
- batch: reference = --problems steps of one problem each (what training did before the
  scheduler: one problem's rollout at a time); ours = one step with `--rollout-batch` of all
  of them (every problem's samples in flight at once). Problems per second, and the ratio.
  Target >= 1.5x. (The two sides take different numbers of optimizer steps; the update's
  cost per problem is the same, so the ratio is the rollouts' gain diluted by the update.)
- vllm: one step with the rollout batch, sampled by `vllm serve` (the CPU build in
  .venv-vllm, adapters handed over through /v1/load_lora_adapter) vs by the local engine:
  step time of each, as measured.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any


def make(engine: Any, problems: list[Any], sandbox: Any, per_step: int, args: Any,
         policy: Any = None, sync: Path | None = None) -> Any:
    from coopcode.train.config import TrainConfig
    from coopcode.train.magrpo import MAGRPOTrainer

    config = TrainConfig(group_size=args.G, max_new_tokens=args.max_new_tokens,
                         problems_per_step=per_step, limit=len(problems), warmup_steps=0)
    return MAGRPOTrainer(engine, config, problems, sandbox=sandbox, policy=policy, sync_dir=sync)


def steps(trainer: Any, n: int) -> tuple[float, list[dict[str, float]]]:
    t0 = time.perf_counter()
    metrics = [trainer.train_step() for _ in range(n)]
    return time.perf_counter() - t0, metrics


def show(name: str, seconds: float, problems: int, metrics: list[dict[str, float]]) -> None:
    gen = sum(m["gen_seconds"] for m in metrics)
    upd = sum(m["update_seconds"] for m in metrics)
    print(f"{name:<34} {problems / seconds:.4f} problems/s  {seconds:7.1f} s  "
          f"(sampling {gen:.1f} s, update {upd:.1f} s, {len(metrics)} steps)")


def batch_part(args: Any, problems: list[Any], sandbox: Any) -> None:
    from coopcode.engines.transformers_engine import TransformersEngine

    n = len(problems)
    print(f"\n== batch: {n} problems, G={args.G}, max_new_tokens={args.max_new_tokens}")
    # Two engines, so both sides start from the same fresh adapters (same seed).
    with TransformersEngine(None) as engine:
        ref_s, ref_m = steps(make(engine, problems, sandbox, 1, args), n)
    show("reference: 1 problem per step", ref_s, n, ref_m)
    with TransformersEngine(None) as engine:
        our_s, our_m = steps(make(engine, problems, sandbox, n, args), 1)
    show(f"ours: --rollout-batch {n}", our_s, n, our_m)
    print(f"batch: ratio problems/s {ref_s / our_s:.2f}x")


def vllm_part(args: Any, problems: list[Any], sandbox: Any) -> None:
    from coopcode.engines.openai_engine import OpenAIEngine
    from coopcode.engines.transformers_engine import TransformersEngine
    from coopcode.engines.vllm_server import VLLMServer
    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir
    from coopcode.train.policy import TransformersPolicy

    n = len(problems)
    print(f"\n== vllm: one step of {n} problems, G={args.G}")
    tmp = Path(tempfile.mkdtemp())
    server = VLLMServer(model_dir(CATALOG[DEFAULT_MODEL]), DEFAULT_MODEL, tmp / "serve.log",
                        runtime_lora=2, max_lora_rank=8)
    try:
        server.wait_ready()
        remote = make(OpenAIEngine(None, base_urls=[server.url]), problems, sandbox, n, args,
                      policy=TransformersPolicy.load(None), sync=tmp / "sync")
        remote_s, remote_m = steps(remote, 1)
        show("sampled by vllm serve", remote_s, n, remote_m)
    finally:
        server.stop()
    with TransformersEngine(None) as engine:
        local_s, local_m = steps(make(engine, problems, sandbox, n, args), 1)
    show("sampled by the local engine", local_s, n, local_m)
    print(f"vllm: local / vllm serve step time {local_s / remote_s:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("batch", "vllm", "both"), default="batch")
    ap.add_argument("--problems", type=int, default=4)
    ap.add_argument("-G", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()

    from coopcode.problems import load_problems
    from sandbox import open_sandbox

    problems = load_problems("humaneval:train")[:args.problems]
    with open_sandbox("auto", warn=print) as sb:
        if args.part in ("batch", "both"):
            batch_part(args, problems, sb)
        if args.part in ("vllm", "both"):
            vllm_part(args, problems, sb)


if __name__ == "__main__":
    main()
