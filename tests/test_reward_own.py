"""The `own` reward (issue 53): syntax credit only for a well-formed part, and a single agent
paid the same two terms as a pair on a problem with a contract.

Every program runs in the real Docker sandbox, through the one judging path (`judge_all`):
a compose problem's canonical halves and hand-made variations of them, the kinds of body
collapsed RL runs learned (a bare `import`, a literal, `pass`, a call of a function nobody
wrote) and outputs cut at the token budget.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coopcode.code_analysis.parts import part_fault
from coopcode.code_analysis.program import combine
from coopcode.collaboration.judging import Judgement, Written, cut_roles, judge_all
from coopcode.collaboration.solve import SolveConfig, solve
from coopcode.engines import ScriptedEngine
from coopcode.problems import Problem, load_problems
from coopcode.records.checks import AgentChecks
from coopcode.rewards import RewardInput, get_reward
from sandbox import Sandbox, Verdict, open_sandbox
from tests.test_divided_work import TASK, canonical_main

pytestmark = pytest.mark.docker

SIGNATURE = "def add_of_order_by_points(nums):\n"
WRONG_AUX = "def aux(nums):\n    return list(nums)\n"  # forgets to sort
INLINE = SIGNATURE + (  # the whole task in one function, no aux
    "    def digits(n):\n"
    "        d = [int(c) for c in str(abs(n))]\n"
    "        d[0] = -d[0] if n < 0 else d[0]\n"
    "        return sum(d)\n"
    "    lst = sorted(nums, key=digits)\n"
    "    return sum(lst[i] for i in range(1, len(lst), 2) if lst[i] % 2 == 0)\n")


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with open_sandbox("docker") as box:
        yield box


@pytest.fixture(scope="module")
def problem() -> Problem:
    (found,) = [p for p in load_problems("compose:train") if p.task_id == TASK]
    assert found.contract is not None and found.contract.program is not None
    return found


def judge(problem: Problem, sb: Sandbox, main: str, helper: str = "", *,
          scheme: str = "contract", cut: frozenset[str] = frozenset()) -> Judgement:
    program = combine(problem.prompt, problem.entry_point, helper, main).text
    contract = problem.contract if scheme == "contract" else None
    (found,) = judge_all([Written(problem, scheme, main, helper, program, contract, cut)], sb,
                         "own")
    return found


def single(problem: Problem) -> str:
    """The canonical solution as a single agent writes it: aux nested in the entry point."""
    return SIGNATURE + (problem.canonical_solution or "")


# -- A: syntax credit for a well-formed part only -------------------------------------------

def test_a_correct_pair_still_earns_both_syntax_terms(problem: Problem, sb: Sandbox) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    j = judge(problem, sb, canonical_main(problem), problem.contract.program)
    assert dict(j.reward) == {"helper_syntax": 0.1, "helper_tests": 1.0,
                              "main_syntax": 0.1, "main_tests": 1.0}
    assert j.checks.helper_well_formed is True and j.checks.main_well_formed is True


@pytest.mark.parametrize("body, why", [
    ("    import math\n", "does nothing"),
    ("    pass\n", "does nothing"),
    ('    """Adds."""\n    ...\n', "does nothing"),
    ("    return 0\n", "does nothing"),  # passes the test `candidate([]) == 0`
    ("    import math\n    return math.pi\n", "reads none of its parameters"),
    ("    return add_even_at_odd(aux(nums))\n", "calls add_even_at_odd, which nobody defines"),
])
def test_mains_that_parse_and_do_nothing_earn_no_syntax_credit(
        problem: Problem, sb: Sandbox, body: str, why: str) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    main = SIGNATURE + body
    j = judge(problem, sb, main, problem.contract.program)
    assert j.checks.main_parses is True  # the old term paid 0.1 for this
    assert j.reward["main_syntax"] == 0.0 and j.agent_rewards["main"] == j.reward["main_tests"]
    assert j.reward["helper_syntax"] == 0.1  # the helper's part is its own
    around = {"aux"}
    assert why in part_fault(main, problem.entry_point, around=around)


def test_a_main_calling_the_helpers_functions_is_well_formed(problem: Problem,
                                                             sb: Sandbox) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    helper = problem.contract.program + "\n\ndef add(lst):\n    return sum(lst[1::2])\n"
    j = judge(problem, sb, SIGNATURE + "    return add(aux(nums))\n", helper)
    assert j.reward["main_syntax"] == 0.1
    # Under `contract`, main may call aux whatever the helper wrote: a helper with no aux is
    # charged to the helper.
    k = judge(problem, sb, canonical_main(problem), "import math\n")
    assert (k.reward["helper_syntax"], k.reward["main_syntax"]) == (0.0, 0.1)


def test_a_helper_that_only_imports_or_returns_a_literal_earns_no_syntax_credit(
        problem: Problem, sb: Sandbox) -> None:
    for helper in ("def aux(nums):\n    import functools\n", "def aux(nums):\n    return []\n"):
        j = judge(problem, sb, canonical_main(problem), helper)
        assert j.checks.helper_parses is True
        assert j.reward["helper_syntax"] == 0.0 and j.reward["main_syntax"] == 0.1


def test_a_part_cut_at_the_token_budget_earns_no_syntax_credit(problem: Problem,
                                                               sb: Sandbox) -> None:
    assert problem.contract is not None and problem.contract.program is not None
    right = (canonical_main(problem), problem.contract.program)
    main_cut = judge(problem, sb, *right, cut=frozenset({"main"}))
    assert main_cut.verdict.passed  # what survived the cut runs, and its tests are paid
    assert dict(main_cut.reward) == {"helper_syntax": 0.1, "helper_tests": 1.0,
                                     "main_syntax": 0.0, "main_tests": 1.0}
    helper_cut = judge(problem, sb, *right, cut=frozenset({"helper"}))
    assert (helper_cut.reward["helper_syntax"], helper_cut.reward["main_syntax"]) == (0.0, 0.1)
    assert cut_roles([("helper", "length"), ("main", "stop"), ("helper", "stop")]) == frozenset()
    assert cut_roles([("helper", "stop"), ("main", "length")]) == {"main"}


def test_solve_passes_the_finish_reason_to_the_reward(problem: Problem, sb: Sandbox) -> None:
    """The same correct code twice: ended by its fence, then cut by the token budget in the
    prose after it (the code extracted is the same)."""
    body = problem.canonical_solution or ""

    def run(budget: int) -> tuple[str, dict[str, float]]:
        engine = ScriptedEngine(lambda *_: body + "\n# and now a long explanation" * 40 + "```")
        config = SolveConfig(scheme="single", n=1, seed=1, reward="own", max_new_tokens=budget)
        a = solve(problem, engine, sb, config).attempts[0]
        assert a.reward is not None and a.main_code.strip().endswith("return add(aux(nums))")
        return a.outputs[-1].finish_reason, dict(a.reward)

    whole, cut = run(2048), run(len(body) // 4 + 8)  # the scripted engine: 4 characters a token
    assert whole == ("stop", {"helper_syntax": 0.1, "helper_tests": 1.0,
                              "main_syntax": 0.1, "main_tests": 1.0})
    assert cut == ("length", {"helper_syntax": 0.0, "helper_tests": 1.0,
                              "main_syntax": 0.0, "main_tests": 1.0})


def test_records_judged_before_parts_keep_the_old_syntax_terms() -> None:
    """A committed run scored again scores as it did: without `*_well_formed` in its checks,
    the syntax terms are whether the code parses."""
    verdict = Verdict(status="passed")
    old = AgentChecks(helper_parses=True, main_parses=True, helper_contract=1.0,
                      main_with_reference=0.5, main_with_stub=False)
    inp = RewardInput(verdict=verdict, main_code="def f(x):\n    import math\n",
                      helper_code="def aux(x):\n    pass\n", scheme="contract", checks=old)
    assert dict(get_reward("own")(inp)) == {"helper_syntax": 0.1, "helper_tests": 1.0,
                                            "main_syntax": 0.1, "main_tests": 0.5}
    alone = RewardInput(verdict=verdict, main_code="def f(x):\n    return 1\n", scheme="single",
                        checks=AgentChecks(main_parses=True))
    assert get_reward("own")(alone)["main_syntax"] == 0.1
    assert AgentChecks.from_record(old.to_record()) == old


# -- B: a single agent earns the same two parts ---------------------------------------------

def test_a_single_agent_with_a_correct_nested_aux_earns_the_pairs_2_2(problem: Problem,
                                                                     sb: Sandbox) -> None:
    j = judge(problem, sb, single(problem), scheme="single")
    assert j.verdict.passed
    assert dict(j.reward) == {"helper_syntax": 0.1, "helper_tests": 1.0,
                              "main_syntax": 0.1, "main_tests": 1.0}
    assert j.reward.total == 2.2 and j.agent_rewards == {}  # GRPO trains on the total
    # aux at the top level is judged the same way.
    assert problem.contract is not None and problem.contract.program is not None
    top = judge(problem, sb, problem.contract.program + "\n\n" + canonical_main(problem),
                scheme="single")
    assert top.reward == j.reward


def test_a_single_agents_wrong_aux_and_right_outer_step_earn_main_tests(
        problem: Problem, sb: Sandbox) -> None:
    wrong_aux = single(problem).replace("return sorted(nums, key=digits_sum)",
                                        "return list(nums)")
    assert wrong_aux != single(problem)
    j = judge(problem, sb, wrong_aux, scheme="single")
    assert not j.verdict.passed  # its own program fails ...
    assert j.reward["main_tests"] == 1.0  # ... but its outer step passes with the reference aux
    assert j.reward["helper_syntax"] == 0.1 and j.reward["helper_tests"] < 1.0


def test_a_single_agent_is_ordered_part_by_part(problem: Problem, sb: Sandbox) -> None:
    right = single(problem)
    wrong_aux = right.replace("return sorted(nums, key=digits_sum)", "return list(nums)")
    wrong_outer = right.replace("return add(aux(nums))", "return add(aux(nums)) + 1")
    both_wrong = wrong_aux.replace("return add(aux(nums))", "return add(aux(nums)) + 1")
    r = {name: judge(problem, sb, code, scheme="single").reward for name, code in
         [("right", right), ("wrong_aux", wrong_aux), ("wrong_outer", wrong_outer),
          ("both_wrong", both_wrong)]}
    aux = {k: v["helper_syntax"] + v["helper_tests"] for k, v in r.items()}
    outer = {k: v["main_syntax"] + v["main_tests"] for k, v in r.items()}
    # A correct aux outranks a wrong one whatever the outer step; the outer step is judged
    # with the reference aux, so it does not move with the aux.
    assert aux["right"] > aux["wrong_aux"] and aux["wrong_outer"] > aux["both_wrong"]
    assert outer["right"] == outer["wrong_aux"] > outer["wrong_outer"] == outer["both_wrong"]


def test_a_single_agent_without_aux_earns_main_terms_on_the_whole_task(
        problem: Problem, sb: Sandbox) -> None:
    j = judge(problem, sb, INLINE, scheme="single")
    assert j.verdict.passed
    assert dict(j.reward) == {"helper_syntax": 0.0, "helper_tests": 0.0,
                              "main_syntax": 0.1, "main_tests": 1.0}
    assert j.checks.helper_contract is None and j.checks.main_with_reference is None


def test_a_single_agent_cut_at_the_budget_loses_both_syntax_terms(problem: Problem,
                                                                  sb: Sandbox) -> None:
    j = judge(problem, sb, single(problem), scheme="single", cut=frozenset({"single"}))
    assert (j.reward["helper_syntax"], j.reward["main_syntax"]) == (0.0, 0.0)
    assert j.reward["helper_tests"] == 1.0 and j.reward["main_tests"] == 1.0


def test_grpo_rollouts_pay_a_single_agent_both_parts(problem: Problem, sb: Sandbox) -> None:
    """A GRPO step's rollout under `own` (the trainer's scorer, no change of its own): the
    sample with a correct nested aux earns 2.2, the inline one 1.1; the advantages follow."""
    from coopcode.training.config import TrainConfig
    from coopcode.training.rollout import ExecutionScorer, RolloutBuilder
    from coopcode.training.tree import assign_advantages, discounted_returns

    bodies = [(problem.canonical_solution or ""), INLINE.removeprefix(SIGNATURE)]

    def script(prompt: str, adapter: str | None, index: int, seed: int) -> str:
        return bodies[index % 2] + "```"

    cfg = TrainConfig(algo="grpo", group_size=2, reward="own", seed=3)
    scorer = ExecutionScorer(sb, get_reward("own"), cfg.timeout, scheme=cfg.collab_scheme)
    (rollout,), _ = RolloutBuilder(ScriptedEngine(script), cfg, scorer, sb).run([problem], step=1)
    node = rollout.root
    paid = {node.samples["single"][a.members["single"]].code.count("def aux"): r
            for a, r in zip(node.actions, node.rewards)}
    assert paid == {1: 2.2, 0: 1.1}
    discounted_returns(node, cfg.gamma)
    assign_advantages(node)
    assert sorted(s.ret for s in node.samples["single"]) == [1.1, 2.2]


def test_the_training_scorer_tells_the_reward_which_completion_was_cut(problem: Problem,
                                                                       sb: Sandbox) -> None:
    """A rollout's completion that stopped at the token budget (its finish reason) loses its
    syntax credit in training as in solve and bench: the trainer's scorer passes it on."""
    from coopcode.training.rollout import ExecutionScorer
    from coopcode.training.tree import JointAction, Node, Sample

    code = single(problem)
    program = combine(problem.prompt, problem.entry_point, "", code).text
    scorer = ExecutionScorer(sb, get_reward("own"), 5.0, scheme="single")
    scored = []
    for finish in ("stop", "length"):
        node = Node(turn=1, samples={"single": [Sample("single", 0, code=code,
                                                      finish_reason=finish)]},
                    actions=[JointAction({"single": 0}, program=program)])
        (found,) = scorer([(problem, node.actions[0], node)])
        scored.append(dict(found.reward))
    assert scored[0]["helper_syntax"] == scored[0]["main_syntax"] == 0.1
    assert scored[1]["helper_syntax"] == scored[1]["main_syntax"] == 0.0
    assert scored[1]["main_tests"] == scored[0]["main_tests"] == 1.0
