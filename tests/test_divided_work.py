"""Work that divides (issue 40): the `contract` and `plan` schemes keep each agent to its
part; each agent's code is judged on its own in the sandbox; the `own` reward pays each
agent what it earned; "both needed" is measured by running it.

Programs are real and run in the sandbox (never here): a compose problem's canonical halves
(aux = the inner HumanEval step, main = the outer step applied to aux's answer) and
hand-made variations of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coopcode.code_analysis.program import combine
from coopcode.collaboration.judging import Judgement, Written, judge_all
from coopcode.collaboration.solve import SolveConfig, solve
from coopcode.engines import ScriptedEngine
from coopcode.problems import Problem, load_problems
from coopcode.rewards import get_reward
from coopcode.schemes import get_scheme, with_main_seeing
from sandbox import open_sandbox
from tests.cli_helpers import assert_one_line_error, coopcode

TASK = "compose/add_of_order_by_points"  # add(aux(nums)): aux sorts by digit sum (train split)


@pytest.fixture(scope="module")
def sb() -> Iterator[Any]:
    with open_sandbox("process", workers=2) as box:
        yield box


@pytest.fixture(scope="module")
def problem() -> Problem:
    (found,) = [p for p in load_problems("compose:train") if p.task_id == TASK]
    assert found.contract is not None and found.contract.solution is not None
    return found


def canonical_main(problem: Problem) -> str:
    """The entry point doing the outer step on aux's answer: the canonical solution without
    its inner `def aux` (the canonical defines aux, then the outer step, then returns)."""
    body = problem.canonical_solution or ""
    lines = body.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("    def aux("))
    end = next(i for i in range(start + 1, len(lines))
               if lines[i].startswith("    ") and not lines[i].startswith("        "))
    signature = problem.prompt[problem.prompt.index(f"def {problem.entry_point}("):]
    signature = signature[: signature.index(":\n") + 2]
    return signature + "".join(lines[:start] + lines[end:])


def judge(problem: Problem, helper: str, main: str, sb: Any, *, reward: str = "own",
          scheme: str = "contract") -> Judgement:
    program = combine(problem.prompt, problem.entry_point, helper, main).text
    written = Written(problem, scheme, main, helper, program, problem.contract)
    (found,) = judge_all([written], sb, reward)
    return found


def test_the_canonical_split_passes_and_both_are_needed(problem: Problem, sb: Any) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    j = judge(problem, problem.contract.program, canonical_main(problem), sb)
    assert j.verdict.passed, j.verdict.detail
    assert j.checks.helper_contract == 1.0 and j.checks.main_with_reference == 1.0
    assert j.checks.main_with_stub is False and j.cooperation.helper_solves is False
    assert j.cooperation.both_needed is True
    assert j.agent_rewards == {"helper": 1.1, "main": 1.1}


def test_both_needed_is_false_when_either_agent_does_it_alone(problem: Problem, sb: Any) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    whole = canonical_main(problem).replace(f"def {problem.entry_point}(", "def whole(", 1)
    # The helper writes the whole task too; main only returns it.
    helper_solves = judge(problem, problem.contract.program + "\n\n" + whole,
                          f"def {problem.entry_point}(nums):\n    return whole(nums)\n", sb)
    assert helper_solves.verdict.passed and helper_solves.cooperation.helper_solves is True
    assert helper_solves.cooperation.both_needed is False
    # Main writes its own aux and ignores the helper's.
    main_alone = judge(problem, problem.contract.program,
                       problem.contract.program + "\n\n" + canonical_main(problem), sb)
    assert main_alone.verdict.passed and main_alone.checks.main_with_stub is True
    assert main_alone.cooperation.both_needed is False
    # A failing pair: not counted either way.
    failing = judge(problem, problem.contract.program,
                    f"def {problem.entry_point}(nums):\n    return -1\n", sb)
    assert not failing.verdict.passed and failing.cooperation.both_needed is None


def test_a_broken_helper_is_charged_to_the_helper(problem: Problem, sb: Any) -> None:
    broken = "def aux(nums):\n    return sorted(nums, key=\n"
    j = judge(problem, broken, canonical_main(problem), sb)
    assert j.verdict.status == "syntax_error"  # the joint file does not parse
    assert j.checks.helper_parses is False and j.checks.main_parses is True
    assert j.agent_rewards["helper"] == 0.0
    assert j.agent_rewards["main"] == 1.1  # main's own work, judged with the reference aux
    seed = judge(problem, broken, canonical_main(problem), sb, reward="seed")
    assert seed.reward.total == 0.0  # one joint reward: the helper's error zeroes main's


def test_the_own_reward_orders_each_agent_by_its_own_work(problem: Problem, sb: Any) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    right_aux, right_main = problem.contract.program, canonical_main(problem)
    wrong_aux = "def aux(nums):\n    return list(nums)\n"  # forgets to sort
    wrong_main = right_main.replace("return add(aux(nums))", "return add(aux(nums)) + 1")
    assert wrong_main != right_main
    rr, wr = judge(problem, right_aux, right_main, sb), judge(problem, wrong_aux, right_main, sb)
    rw, ww = judge(problem, right_aux, wrong_main, sb), judge(problem, wrong_aux, wrong_main, sb)
    # A correct helper outranks a wrong one, whatever main wrote.
    assert rr.agent_rewards["helper"] > wr.agent_rewards["helper"]
    assert rw.agent_rewards["helper"] > ww.agent_rewards["helper"]
    # Main's reward does not move when only the helper changes (the reference aux judges it).
    assert rr.agent_rewards["main"] == wr.agent_rewards["main"]
    assert rw.agent_rewards["main"] == ww.agent_rewards["main"]
    # A correct main outranks a wrong one, whatever the helper wrote.
    assert rr.agent_rewards["main"] > rw.agent_rewards["main"]
    assert wr.agent_rewards["main"] > ww.agent_rewards["main"]
    # The pair's total is the sum of the two, and the reward's terms say whose is whose.
    assert rr.reward.total == pytest.approx(sum(rr.agent_rewards.values()))
    assert list(rr.reward) == list(get_reward("own").terms)


def scripted(prompt: str, adapter: str | None, index: int, seed: int) -> str:
    """A chat model: the helper writes running sums; main calls aux (closing the fence)."""
    prefill = prompt.rsplit("```python\n", 1)[-1]
    if "You are the helper" in prompt:
        return "    return sorted(nums)\n```"
    if "specify ONE helper function" in prompt:
        return 'nums: list) -> list:\n    """nums sorted."""\n    ...\n```'
    assert prefill.startswith("def ")
    return "    return len(aux(nums))\n```"


def _solve(problem: Problem, scheme: str, sb: Any) -> Any:
    engine = ScriptedEngine(scripted)
    return solve(problem, engine, sb, SolveConfig(scheme=scheme, n=1, seed=1)).attempts[0]


def test_a_contract_samples_prompts_hold_no_aux_body(problem: Problem, sb: Any) -> None:
    assert problem.contract is not None and problem.contract.solution is not None
    a = _solve(problem, "contract", sb)
    prompts = {o.role: o.prompt for o in a.outputs}
    assert set(prompts) == {"helper", "main"}
    # The helper sees the contract, not the task it serves.
    assert problem.contract.docstring.splitlines()[0] in prompts["helper"]
    assert problem.entry_point not in prompts["helper"]
    # Main sees the task and aux's contract, never a body of aux: neither the reference's
    # nor the helper's.
    assert "def aux(nums):" in prompts["main"] and problem.entry_point in prompts["main"]
    body_lines = [line.strip() for line in problem.contract.solution.splitlines() if line.strip()]
    assert not any(line in prompts["main"] for line in body_lines)
    assert "return sorted(nums)" not in prompts["main"]
    assert a.contract.startswith("def aux(nums):") and a.checks is not None
    # --main-sees code: main is shown the helper's code instead.
    assert with_main_seeing("contract", "code") == "contract+code"
    shown = {o.role: o.prompt for o in _solve(problem, "contract+code", sb).outputs}
    assert "return sorted(nums)" in shown["main"]


def test_plan_main_writes_the_contract_the_helper_implements(problem: Problem, sb: Any) -> None:
    a = _solve(problem, "plan", sb)
    assert [o.role for o in a.outputs] == ["planner", "helper", "main"]
    planner, helper, main = (o.prompt for o in a.outputs)
    assert problem.entry_point in planner
    assert "nums sorted." in helper and problem.entry_point not in helper  # only the contract
    assert "nums sorted." in main and "return sorted(nums)" not in main
    assert a.contract.startswith("def aux(nums: list) -> list:")
    assert a.helper_code.startswith("def aux(nums: list) -> list:")
    assert get_scheme("plan").trainable and get_scheme("plan").contract_source == "planned"


def test_a_problem_without_a_contract_is_refused_in_one_line(cli_env: dict[str, str],
                                                            tmp_path: Path) -> None:
    assert_one_line_error(coopcode("solve", "HumanEval/0", "--scheme", "contract", env=cli_env),
                          "needs a contract", "HumanEval/0")
    assert_one_line_error(coopcode("bench", "--scheme", "contract", "--problems", "humaneval:test",
                                   "--out", str(tmp_path / "b"), env=cli_env),
                          "40 of 40 problems have none")
    assert_one_line_error(coopcode("train", "--scheme", "contract", "--problems", "humaneval:fit",
                                   "--out", str(tmp_path / "t"), env=cli_env), "needs a contract")
    assert not (tmp_path / "b").exists()


def test_bench_runs_contract_and_plan_on_compose_end_to_end(tiny_model_dir: Path, tmp_path: Path,
                                                          cli_env: dict[str, str]) -> None:
    out = tmp_path / "bench"
    done = coopcode("bench", "--model", str(tiny_model_dir), "--problems", "compose:test",
                    "--scheme", "contract,plan", "--main-sees", "code", "--limit", "2", "--n", "2",
                    "--k", "1,2", "--max-new-tokens", "16", "--sandbox", "process",
                    "--out", str(out), "--json", env=cli_env)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert [r["scheme"] for r in summary["rows"]] == ["contract+code", "plan+code"]
    assert all("both_needed_rate" in r for r in summary["rows"])
    records = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 8
    for r in records:
        assert r["contract"].startswith("def aux(")
        assert set(r["agents"]) >= {"helper_parses", "main_with_stub"}
        assert "both_needed" in r["cooperation"]
    contract_rows = [r for r in records if r["scheme"] == "contract+code"]
    assert all(r["agents"]["main_with_reference"] is not None for r in contract_rows)
    assert "both needed" in (out / "report.md").read_text()
    meta = json.loads((out / "meta.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{16}", meta["identity"]["prompts"])


def test_magrpo_pays_each_agent_its_own_reward(problem: Problem, sb: Any) -> None:
    """A training step's rollout under `contract` with the `own` reward: helpers that break
    the file are paid 0, their mains (right either way) are paid in full, in aligned and
    cross modes; each agent's advantage comes from its own reward."""
    from coopcode.training.config import TrainConfig
    from coopcode.training.rollout import ExecutionScorer, RolloutBuilder
    from coopcode.training.tree import assign_advantages, discounted_returns

    assert problem.contract is not None and problem.contract.solution is not None
    good_aux = problem.contract.solution
    main_body = canonical_main(problem).split(":\n", 1)[1]

    def script(prompt: str, adapter: str | None, index: int, seed: int) -> str:
        if "You are the helper" in prompt:  # sample 0 breaks the file, sample 1 is right
            return ("    return sorted(nums, key=\n" if index % 2 == 0 else good_aux) + "```"
        return main_body + "```"

    for joint in ("aligned", "cross"):
        cfg = TrainConfig(algo="magrpo", scheme="contract", joint=joint, group_size=2,
                          reward="own", seed=3)
        scorer = ExecutionScorer(sb, get_reward("own"), cfg.timeout, scheme="contract")
        engine = ScriptedEngine(script)
        (rollout,), _ = RolloutBuilder(engine, cfg, scorer, sb).run([problem], step=1)
        node = rollout.root
        paid = {(a.members["helper"], a.members["main"]): a.agent_rewards for a in node.actions}
        helpers = {node.samples["helper"][h].code.count("key=\n") for h, _ in paid}
        assert helpers == {0, 1}  # one helper sample broke the file, one did not
        for (h, _m), rewards in paid.items():
            broken = "key=\n" in node.samples["helper"][h].code
            assert rewards["helper"] == (0.0 if broken else 1.1), rewards
            assert rewards["main"] == 1.1  # main's own work, whatever the helper wrote
        discounted_returns(node, cfg.gamma)
        assign_advantages(node)
        assert sorted(s.ret for s in node.samples["helper"]) == [0.0, 1.1]
        assert all(s.ret == 1.1 for s in node.samples["main"])
