"""Bench and training's rollouts judge a sample along one path: the same helper and main code
on the same problem get the same program, verdict, cooperation and reward in a bench's
samples.jsonl and in a rollout's joint action (`coopcode.collaboration.judging`), under each
reward. A scripted engine writes the code; it runs only in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bench import good_script

from coopcode.engines import ScriptedEngine
from coopcode.evaluation.bench import BenchConfig, run_bench
from coopcode.problems import load_problems
from coopcode.rewards import resolve_reward
from coopcode.training.config import TrainConfig
from coopcode.training.rollout import ExecutionScorer, RolloutBuilder

REPO = Path(__file__).resolve().parent.parent
BELOW_ZERO = REPO / "examples" / "below_zero.py"


def wraps_a_helper_that_solves(prompt: str, adapter: str | None, index: int) -> str:
    """A shell: the helper writes the whole answer, main only returns its call."""
    if prompt.endswith("def aux("):
        return ("ops):\n    total = 0\n    for o in ops:\n        total += o\n        if total < 0:\n"
                "            return True\n    return False\n```")
    return "    return aux(operations)\n```"


@pytest.mark.parametrize("reward", ["seed", "coop", "credit"])
@pytest.mark.parametrize("script", [good_script, wraps_a_helper_that_solves])
def test_a_sample_gets_one_verdict_cooperation_and_reward_in_bench_and_rollouts(
        reward: str, script: object, tmp_path: Path, process_sandbox: object) -> None:
    problems = load_problems(str(BELOW_ZERO))
    config = BenchConfig(problems=str(BELOW_ZERO), schemes=("sequential",), ks=(1,), n=1, reward=reward)
    run_bench(config, problems, ScriptedEngine(script), process_sandbox, tmp_path / "bench")
    record = json.loads((tmp_path / "bench" / "samples.jsonl").read_text().splitlines()[0])

    train = TrainConfig(scheme="sequential", group_size=2, reward=reward, agent_credit="joint")
    scorer = ExecutionScorer(process_sandbox, resolve_reward(reward, "sequential"), train.timeout,
                             scheme="sequential")
    roots, _ = RolloutBuilder(ScriptedEngine(script), train, scorer, process_sandbox).run(problems, step=1)
    node = roots[0].root
    for action in node.actions:
        helper = node.samples["helper"][action.members["helper"]].code
        main = node.samples["main"][action.members["main"]].code
        assert (helper, main) == (record["helper_code"], record["main_code"])  # the same sample
        assert action.program == record["program"]
        assert action.passed == record["passed"]
        assert action.reward is not None and action.reward.to_dict() == record["reward"]
        assert action.cooperation.to_record() == record["cooperation"]
