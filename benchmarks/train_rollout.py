"""Training steps: a rollout batch of several problems vs one problem per step, and who samples.

    .venv/bin/python benchmarks/train_rollout.py [--part batch|vllm|both|engines] [--problems 4]
                                                 [-G 4] [--max-new-tokens 256] [--before REV]

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
- engines: one step with the rollout batch on the embedded engine of git revision --before
  (the code as it was, unpacked from git) and on this checkout's, each in a child process,
  one after the other: step, sampling and update seconds of each, and the ratios.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coopcode.engines import Engine


def make(engine: Engine, problems: list[Any], sandbox: Any, per_step: int, args: Any,
         policy: Any = None, sync: Path | None = None) -> Any:
    from coopcode.training.config import TrainConfig
    from coopcode.training.magrpo import MAGRPOTrainer

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
    from coopcode.engines.embedded.engine import TransformersEngine

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
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.engines.served.openai_engine import OpenAIEngine
    from coopcode.engines.served.vllm_server import VLLMServer
    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir
    from coopcode.training.policy import TransformersPolicy

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


CHILD = """
import json, sys, time
import coopcode
from coopcode.engines.embedded.engine import TransformersEngine
from coopcode.problems import load_problems
from coopcode.training.config import TrainConfig
from coopcode.training.magrpo import MAGRPOTrainer
from sandbox import open_sandbox
n, G, tokens = (int(a) for a in sys.argv[1:4])
problems = load_problems("humaneval:train")[:n]
with open_sandbox("auto") as sb, TransformersEngine(None) as engine:
    config = TrainConfig(group_size=G, max_new_tokens=tokens, problems_per_step=n, limit=n,
                         warmup_steps=0)
    trainer = MAGRPOTrainer(engine, config, problems, sandbox=sb)
    t0 = time.perf_counter()
    m = trainer.train_step()
    print(json.dumps({"step": time.perf_counter() - t0, "sampling": m["gen_seconds"],
                      "update": m["update_seconds"], "code": coopcode.__file__}))
"""


def engines_part(args: Any) -> None:
    import json
    import os
    import subprocess
    import sys

    n = len(args.problem_ids)
    print(f"\n== engines: one MAGRPO step of {n} problems (--rollout-batch {n}), G={args.G}, "
          f"max_new_tokens={args.max_new_tokens}; before = {args.before}, after = this checkout")
    repo = Path(__file__).resolve().parents[1]
    before = Path(tempfile.mkdtemp()) / "before"
    before.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", args.before],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
    got = {}
    for name, tree in (("before", before), ("after", repo)):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run([sys.executable, "-c", CHILD, str(n), str(args.G),
                               str(args.max_new_tokens)], cwd=tree, env=env,
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{name}: the step failed: {done.stderr.strip()[-2000:]}")
        got[name] = json.loads(done.stdout.strip().splitlines()[-1])
        r = got[name]
        print(f"{name:<7} step {r['step']:7.1f} s  sampling {r['sampling']:7.1f} s  "
              f"update {r['update']:6.1f} s  ({r['code']})")
    b, a = got["before"], got["after"]
    print(f"engines: after/before step time {a['step'] / b['step']:.2f}, sampling "
          f"{a['sampling'] / b['sampling']:.2f}, update {a['update'] / b['update']:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", choices=("batch", "vllm", "both", "engines"), default="batch")
    ap.add_argument("--before", default="d4efd26", help="--part engines: the earlier revision")
    ap.add_argument("--problems", type=int, default=4)
    ap.add_argument("-G", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    args = ap.parse_args()

    from coopcode.problems import load_problems
    from sandbox import open_sandbox

    problems = load_problems("humaneval:train")[:args.problems]
    if args.part == "engines":
        args.problem_ids = [p.task_id for p in problems]
        engines_part(args)
        return
    with open_sandbox("auto", warn=print) as sb:
        if args.part in ("batch", "both"):
            batch_part(args, problems, sb)
        if args.part in ("vllm", "both"):
            vllm_part(args, problems, sb)


if __name__ == "__main__":
    main()
