"""`credit`: a reward a shell cannot game, and per-agent counterfactual credit in MAGRPO.

Every program here runs in a real sandbox (the process backend; the CLI test too); the
orderings are the ones `coopcode.rewards.credit` promises. Per-agent credit is checked on
a scripted engine driving the real rollout builder, judging path and advantage math.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import coopcode
from test_own_work import BRACKETS, SOLVING_HELPER, SPLIT_MAIN, STEP_HELPER, pair

from coopcode.collaboration.judging import judge_all
from coopcode.rewards import get_reward

SOLO = ("def correct_bracketing(brackets: str):\n    depth = 0\n    for b in brackets:\n"
        "        depth += 1 if b == '(' else -1\n        if depth < 0:\n            return False\n"
        "    return depth == 0\n")
WRAPPER = "def correct_bracketing(brackets: str):\n    return aux(brackets)\n"
BROKEN_SHELL = "def correct_bracketing(brackets: str):\n    return aux(brackets) == 0\n"  # inverts it
NEARLY_SPLIT = ("def correct_bracketing(brackets: str):\n    depth = 0\n    for c in brackets:\n"
                "        depth += aux(c)\n    return depth == 0\n")  # misses ')(' orders: 10/12
HALF_SPLIT = ("def correct_bracketing(brackets: str):\n    depth = 0\n    for c in brackets:\n"
              "        depth += aux(c)\n    return depth <= 0\n")  # takes ')' and ')(' orders too


def totals(process_sandbox: object, *pairs: tuple[str, str]) -> list[float]:
    judged = judge_all([pair(h, m) for h, m in pairs], process_sandbox, "credit")  # type: ignore[arg-type]
    return [j.reward.total for j in judged]


def test_credit_orders_solo_shell_and_split(process_sandbox: object) -> None:
    solo, shell, broken, split, nearly, half = totals(
        process_sandbox, (SOLVING_HELPER, SOLO), (SOLVING_HELPER, WRAPPER),
        (SOLVING_HELPER, BROKEN_SHELL), (STEP_HELPER, SPLIT_MAIN), (STEP_HELPER, NEARLY_SPLIT),
        (STEP_HELPER, HALF_SPLIT))
    assert solo == pytest.approx(1.2) and solo >= shell  # a shell earns nothing for being one
    assert shell == pytest.approx(1.2) and broken < shell  # breaking the answer costs the tests
    assert split == pytest.approx(1.45) and split > solo  # a real split that passes: the most
    # paid in proportion: a split outranks a correct solo answer only above 80% of the tests
    assert nearly == pytest.approx(0.2 + 1.25 * 10 / 12) and nearly > solo
    assert half < solo


def test_cooperation_is_paid_in_proportion_and_never_when_the_helper_solves(
        process_sandbox: object) -> None:
    # main loops over the helper's answer on each character, but the helper alone also solves
    # it: own work, no pay
    looping = ("def correct_bracketing(brackets: str):\n    ok = aux(brackets)\n"
               "    for c in brackets:\n        if not ok:\n            return ok and len(brackets) > 0\n"
               "    return ok\n")
    judged = judge_all([pair(SOLVING_HELPER, looping), pair(STEP_HELPER, NEARLY_SPLIT)],
                       process_sandbox, "credit")  # type: ignore[arg-type]
    assert judged[0].cooperation.own_work and judged[0].cooperation.helper_solves
    assert judged[0].reward["cooperation"] == 0.0
    half = judged[1]
    share = half.verdict.n_passed / half.verdict.n_tests
    assert 0 < share < 1 and half.reward["cooperation"] == pytest.approx(0.25 * share)
    assert get_reward("credit").credit == "counterfactual"


def test_evaluate_with_credit_writes_reward_and_cooperation(tmp_path: Path) -> None:
    lines = [{"task_id": BRACKETS.task_id, "helper": h, "main": m}
             for h, m in ((SOLVING_HELPER, WRAPPER), (STEP_HELPER, SPLIT_MAIN),
                          (SOLVING_HELPER, SOLO))]
    samples = tmp_path / "pairs.jsonl"
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "scored.jsonl"
    done = coopcode("evaluate", str(samples), "--problems", "humaneval:all", "--k", "1",
                    "--reward", "credit", "--out", str(out), "--sandbox", "process", "--json")
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["reward"]["total"] for r in rows] == [1.2, 1.45, 1.2]
    assert [r["cooperation"]["own_work"] for r in rows] == [False, True, False]
    assert [r["cooperation"]["helper_solves"] for r in rows] == [True, False, True]
    assert all(set(r["cooperation"]) == {"patterns", "own_work", "helper_solves", "both_needed"}
               for r in rows)
    result = json.loads(done.stdout)
    assert result["own_work_rate"] == pytest.approx(1 / 3, abs=1e-4)
    assert result["helper_solves_rate"] == pytest.approx(2 / 3, abs=1e-4)
    text = coopcode("evaluate", str(samples), "--problems", "humaneval:all", "--k", "1",
                    "--reward", "credit", "--sandbox", "process")
    assert "main does own work with the helper's answer: 33.3%" in text.stdout


def continuation(code: str, prompt: str) -> str:
    """What the model writes after the prompt's pre-filled start of the code, then the fence."""
    start = prompt.rpartition("```python\n")[2]
    assert code.startswith(start), (start, code)
    return code[len(start):] + "```"


def credit_script(alone_passes: bool) -> Any:
    """Helper 0 and 2 write a useful part (the step of each bracket), 1 and 3 a useless one;
    main builds on what it sees; main alone writes the answer `alone_passes` says."""
    useless = "def aux(c):\n    return 0\n"
    wrong = "def correct_bracketing(brackets: str):\n    return True\n"

    def script(prompt: str, adapter: str | None, index: int) -> str:
        if adapter == "helper":
            return continuation(STEP_HELPER if index % 2 == 0 else useless, prompt)
        if "def aux" in prompt:  # main, seeing the helper's code
            return continuation(SPLIT_MAIN if "1 if c ==" in prompt else BROKEN_SHELL, prompt)
        return continuation(SOLO if alone_passes else wrong, prompt)

    return script


@pytest.mark.parametrize("alone_passes", [False, True])
def test_counterfactual_credit_pays_the_helper_its_contribution(
        process_sandbox: object, alone_passes: bool) -> None:
    from coopcode.engines import ScriptedEngine
    from coopcode.rewards import resolve_reward
    from coopcode.training.config import TrainConfig
    from coopcode.training.rollout import ExecutionScorer, RolloutBuilder
    from coopcode.training.tree import assign_advantages, discounted_returns

    engine = ScriptedEngine(credit_script(alone_passes))
    results = {}
    for credit in ("counterfactual", "joint"):
        config = TrainConfig(reward="credit", group_size=4, agent_credit=credit, seed=3)
        scorer = ExecutionScorer(process_sandbox, resolve_reward("credit", "sequential"))  # type: ignore[arg-type]
        builder = RolloutBuilder(engine, config, scorer, process_sandbox)  # type: ignore[arg-type]
        (rollout,), stats = builder.run([BRACKETS], step=0)
        node = rollout.root
        discounted_returns(node, config.gamma)
        assign_advantages(node)
        results[credit] = (node, stats)
    node, stats = results["counterfactual"]
    assert stats.alone_samples == 4
    helpers = [node.samples["helper"][a.members["helper"]] for a in node.actions]
    mains = [node.samples["main"][a.members["main"]] for a in node.actions]
    useful = ["1 if c ==" in h.code for h in helpers]
    assert 0 < sum(useful) < 4, "the seeds should give both kinds of helper"
    for a, h, m in zip(node.actions, helpers, mains):
        assert a.alone is not None and a.alone.passed is alone_passes
        assert a.agent_rewards["main"] == a.reward.total  # main: the joint reward
        assert a.agent_rewards["helper"] == pytest.approx(a.reward.total - a.alone.reward.total)
        assert h.ret == pytest.approx(a.agent_rewards["helper"])
        assert m.ret == pytest.approx(a.reward.total)
        # the helper's advantage follows its contribution: positive for the useful part
        assert (h.advantage > 0) == ("1 if c ==" in h.code)
    # main alone is asked with the single-agent prompt under main's adapter, never the helper's
    asked = [r for call in engine.calls for r in call]
    assert any(r.adapter == "main" and "def aux" not in r.prompt for r in asked)
    # joint credit: both agents see the same return, and no answer alone is sampled
    joint, joint_stats = results["joint"]
    assert joint_stats.alone_samples == 0
    for a in joint.actions:
        assert not a.agent_rewards and a.alone is None
        assert joint.samples["helper"][a.members["helper"]].ret == pytest.approx(a.reward.total)
    # what main alone scores moves every helper's reward by the same amount, not the ordering
    gaps = [a.agent_rewards["helper"] - a.reward.total for a in node.actions]
    assert max(gaps) == pytest.approx(min(gaps))


def test_bench_and_training_judge_a_sample_alike(process_sandbox: object) -> None:
    """One judging path: the verdict, cooperation and reward a training rollout gives a joint
    action are the ones the bench (and solve) gives the same code."""
    from coopcode.code_analysis.program import combine
    from coopcode.collaboration.solve import final_jobs, score
    from coopcode.records.attempts import Attempt
    from coopcode.rewards import resolve_reward
    from coopcode.training.rollout import ExecutionScorer
    from coopcode.training.tree import JointAction, Node, Sample

    for helper, main in ((STEP_HELPER, SPLIT_MAIN), (SOLVING_HELPER, WRAPPER),
                         (SOLVING_HELPER, BROKEN_SHELL)):
        program = combine(BRACKETS.prompt, BRACKETS.entry_point, helper, main)
        attempt = Attempt(BRACKETS.task_id, 0, "sequential", helper_code=helper, main_code=main,
                          program=program)
        score(attempt, process_sandbox.run_many(final_jobs(BRACKETS, attempt, 5.0)),  # type: ignore[attr-defined]
              BRACKETS, "credit")
        node = Node(turn=1, samples={"helper": [Sample("helper", 0, code=helper)],
                                     "main": [Sample("main", 0, code=main)]})
        action = JointAction({"helper": 0, "main": 0}, program=program.text)
        scorer = ExecutionScorer(process_sandbox, resolve_reward("credit", "sequential"))  # type: ignore[arg-type]
        (scored,) = scorer([(BRACKETS, action, node)])
        def outcome(v: Any) -> tuple[Any, ...]:  # what was found, not how long it took
            return v.status, v.n_passed, v.n_tests, tuple(t.status for t in v.tests)

        assert outcome(scored.verdict) == outcome(attempt.verdict)
        assert scored.cooperation == attempt.cooperation
        assert scored.reward == attempt.reward
