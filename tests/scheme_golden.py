"""What every scheme produces, in solve, bench and training rollouts, with a scripted engine
whose text shows each sample's seed: the record a change of the runner must reproduce.

`python tests/scheme_golden.py` rewrites tests/fixtures/scheme_golden.json (only when the
schemes are meant to change); tests/test_scheme_golden.py compares against it.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "fixtures" / "scheme_golden.json"
EXAMPLES = REPO / "examples"

PLAN = 'def aux(ops: list) -> list:\n    """The running sums of ops."""\n    ...\n'
HELPER = "def aux(ops):\n    total = 0\n    out = []\n    for o in ops:\n        total += o\n        out.append(total)\n    return out\n"
RIGHT = "    return any(b < 0 for b in aux(operations))\n"
WRONG = "    return all(b < 0 for b in aux(operations))\n"


def script(prompt: str, adapter: str | None, index: int, seed: int) -> str:
    """A chat model's answer, continuing the pre-filled fence: the helper writes running sums;
    the main agent is right or wrong by its seed (so turn 2 has something to revise); a
    comment in the code names the seed, adapter and sample index it was written with."""
    prefill = prompt.rsplit("```python\n", 1)[-1]
    tail = f"```\nseed {seed} adapter {adapter} index {index}"
    mark = f"    # seed {seed} adapter {adapter} index {index}\n"
    if "You are the helper" in prompt or "Revise your helper" in prompt:
        full = HELPER + mark
    elif "specify ONE helper function" in prompt:  # plan: main writes aux's contract
        full = PLAN
    elif prefill.startswith("def ") and prefill.rstrip().endswith(":"):
        full = prefill + (RIGHT if seed % 3 else WRONG) + mark
    else:
        full = prefill + "    pass\n" + mark
    if not full.startswith(prefill):
        full = prefill + full
    return full[len(prefill):] + tail


def _digest(x: Any) -> str:
    """Prompts are long: the record keeps a digest of each."""
    return hashlib.sha256(json.dumps(x).encode()).hexdigest()[:16]


def _attempt(d: dict[str, Any]) -> dict[str, Any]:
    keep = ("task_id", "sample", "scheme", "helper_code", "main_code", "program", "turns_used",
            "feedback")
    out = {k: d[k] for k in keep}
    out["outputs"] = [{**{k: o[k] for k in ("role", "turn", "raw", "code", "n_tokens",
                                            "finish_reason", "adapter", "seed")},
                       "prompt": _digest(o["prompt"])} for o in d["outputs"]]
    v = d.get("verdict") or {}
    out["verdict"] = [v.get("status"), v.get("n_passed"), v.get("n_tests")]
    out["reward"] = (d.get("reward") or {}).get("total")
    return out


def contract_problem() -> Any:
    """below_zero with a contract for aux (the running sums), for the `contract` schemes."""
    from dataclasses import replace

    from coopcode.problems import Contract, load_problem_file

    problem = load_problem_file(EXAMPLES / "below_zero.py")
    contract = Contract(signature="def aux(ops: list) -> list:",
                        docstring="The running sums of ops: aux([1, -2]) == [1, -1].",
                        tests="def check(candidate):\n    assert candidate([1, -2]) == [1, -1]\n",
                        solution="    out, total = [], 0\n    for o in ops:\n        total += o\n"
                                 "        out.append(total)\n    return out\n")
    return replace(problem, contract=contract)


def solve_attempts(engine_factory: Any, sandbox: Any) -> dict[str, Any]:
    from coopcode.collaboration.solve import SolveConfig, solve
    from coopcode.schemes import SCHEMES

    problem = contract_problem()  # the other schemes never look at its contract
    out = {}
    for scheme in SCHEMES:
        for turns in (1, 2):
            cfg = SolveConfig(scheme=scheme, n=3, temperature=0.8, seed=3, turns=turns)
            result = solve(problem, engine_factory(), sandbox, cfg, helper_adapter="helper",
                           main_adapter="main")
            out[f"{scheme}/{turns}"] = [_attempt(a.to_dict()) for a in result.attempts]
    return out


def bench_records(engine_factory: Any, sandbox: Any) -> dict[str, Any]:
    from coopcode.evaluation.bench import BenchConfig, run_bench
    from coopcode.problems import load_problems
    from coopcode.schemes import SCHEMES, get_scheme

    problems = load_problems(str(EXAMPLES))
    out = {}
    schemes = tuple(s for s in SCHEMES if get_scheme(s).contract_source != "problem")
    for turns in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = BenchConfig(problems="examples", schemes=schemes, ks=(1,), n=2, turns=turns, seed=5)
            run_bench(cfg, problems, engine_factory(), sandbox, Path(tmp))
            records = [json.loads(x) for x in (Path(tmp) / "samples.jsonl").read_text().splitlines()]
        records.sort(key=lambda r: (r["scheme"], r["task_id"], r["sample"]))
        out[str(turns)] = [_attempt(r) for r in records]
    return out


def rollout_trees(engine_factory: Any, sandbox: Any) -> dict[str, Any]:
    from coopcode.problems import load_problems
    from coopcode.rewards import resolve_reward
    from coopcode.training.config import TrainConfig
    from coopcode.training.rollout import ExecutionScorer, RolloutBuilder

    problems = load_problems(str(EXAMPLES))[:2]
    out = {}
    combos = [("grpo", "sequential", "aligned")] + [
        ("magrpo", s, j) for s in ("sequential", "parallel", "plan", "contract")
        for j in ("aligned", "cross")]
    for algo, scheme, joint in combos:
        if scheme == "contract":
            problems = [contract_problem()]
        for turns in (1, 2):
            cfg = TrainConfig(algo=algo, scheme=scheme, joint=joint, group_size=2, turns=turns,
                              seed=7)
            scorer = ExecutionScorer(sandbox, resolve_reward(cfg.reward, cfg.collab_scheme),
                                     cfg.timeout, scheme=cfg.collab_scheme)
            builder = RolloutBuilder(engine_factory(), cfg, scorer, sandbox)
            roots, _ = builder.run(problems, step=2)
            out[f"{algo}/{scheme}/{joint}/{turns}"] = [
                {"task_id": r.problem.task_id, "nodes": [_node(n) for n in r.root.walk()]}
                for r in roots]
    return out


def _node(node: Any) -> dict[str, Any]:
    return {
        "turn": node.turn,
        "path": list(node.path),
        "samples": {role: [[s.group, s.text, s.code, s.finish_reason, _digest(s.prompt_ids)]
                           for s in samples] for role, samples in sorted(node.samples.items())},
        "actions": [[a.members, a.program, a.reward.total if a.reward else None, a.feedback]
                    for a in node.actions],
    }


def snapshot() -> dict[str, Any]:
    from coopcode.engines import ScriptedEngine
    from sandbox import open_sandbox

    def engine() -> ScriptedEngine:
        e = ScriptedEngine(script)
        e.load_adapter("helper", "helper")
        e.load_adapter("main", "main")
        return e

    with open_sandbox("process", workers=2) as sb:
        return {"solve": solve_attempts(engine, sb), "bench": bench_records(engine, sb),
                "rollouts": rollout_trees(engine, sb)}


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    GOLDEN.write_text(json.dumps(snapshot(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes)")
