"""One path from what a sample's agents wrote to its verdict, cooperation and reward.

`solve`, `bench`, `evaluate` and training's rollouts all judge a finished sample here:
1. `sample_jobs(written, timeout)`: the sandbox jobs: the combined program against the
   problem's hidden tests, then, for a scheme with a helper, each agent judged on its own
   (`JobPlan`): the helper's code alone, each candidate function standing in for the entry
   point (`coopcode.collaboration.helper_alone`); the helper's aux against its contract's
   own tests; main with the contract's reference aux in place of the helper's; main with
   the helper's functions replaced by stubs that raise (where they apply). A single agent
   on a problem with a contract is judged by the same two parts where it writes an aux
   (at the top level or inside its entry point): its aux, lifted out, against the
   contract's tests; its code with its aux taken out and the reference aux in its place.
2. `judgement(written, verdicts, reward)`: the program's verdict, the pair's cooperation
   (`coopcode.code_analysis.cooperation`: own work from the syntax tree, `helper_solves` from
   the helper-alone verdicts, `both_needed` from the pair, the helper alone and main
   alone), each agent's checks (`coopcode.records.checks`, with whether each part is well
   formed: `coopcode.code_analysis.parts`), and the reward of all that
   (and, for a reward that pays each agent its own, each agent's reward).
`judge_all` does both for many samples with one batch of sandbox jobs. So a sample gets the
same verdict, cooperation and reward whichever job produced it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from coopcode.code_analysis.cooperation import analyse_cooperation
from coopcode.code_analysis.parts import lift, names_bound, part_fault, without
from coopcode.code_analysis.patterns import parse_or_none, top_functions
from coopcode.code_analysis.program import prompt_context, syntax_check
from coopcode.collaboration.helper_alone import helper_alone_jobs, helper_solves
from coopcode.problems import Contract, Problem
from coopcode.problems.contract import AUX
from coopcode.records.checks import NOT_CHECKED, AgentChecks
from coopcode.records.cooperation import NO_HELPER, Cooperation
from coopcode.records.vocabulary import FinishReason, Role
from coopcode.rewards import Reward, RewardBreakdown, RewardInput, resolve_reward
from coopcode.schemes import has_helper
from sandbox import Job, Sandbox, Verdict

STUB_BODY = "    raise NotImplementedError('the helper was replaced by a stub')\n"


@dataclass(frozen=True)
class Written:
    """What one sample's agents wrote, ready to be judged. `contract` is the contract the
    helper implemented (the problem's under the `contract` scheme, main's own under `plan`;
    None where the helper wrote what it chose). `cut`: the roles whose last output ran out
    of tokens (`cut_roles`); their parts are not well formed."""

    problem: Problem
    scheme: str
    main_code: str
    helper_code: str = ""
    program: str = ""  # the combined program the sandbox runs
    contract: Contract | None = None
    cut: frozenset[str] = frozenset()


def cut_roles(finishes: Iterable[tuple[str, str]]) -> frozenset[str]:
    """The roles whose last output, of (role, finish reason) in the order written, was cut
    at the token budget."""
    last = dict(finishes)
    return frozenset(role for role, reason in last.items() if reason == FinishReason.LENGTH)


@dataclass(frozen=True)
class Judgement:
    """A sample's verdict on the hidden tests, how the pair cooperated, each agent's checks,
    and its reward (and each agent's, for a reward that pays each its own)."""

    verdict: Verdict
    cooperation: Cooperation
    reward: RewardBreakdown
    reward_name: str
    checks: AgentChecks = NOT_CHECKED
    agent_rewards: dict[str, float] = field(default_factory=dict)


def _pair(written: Written) -> bool:
    return has_helper(written.scheme) and bool(written.helper_code.strip())


def _context(written: Written) -> str:
    """What the problem gives every program (imports, given functions), and the contract's
    imports (the helper's signature may need them)."""
    parts = [prompt_context(written.problem.prompt, written.problem.entry_point)]
    if written.contract is not None and written.contract.imports.strip():
        parts.insert(0, written.contract.imports)
    return "\n\n\n".join(p.strip("\n") for p in parts if p.strip())


def _program(*parts: str) -> str:
    return "\n\n\n".join(p.strip("\n") for p in parts if p and p.strip()) + "\n"


def stub_names(written: Written) -> list[str]:
    """The helper's functions that a stub replaces: its top-level functions, and the
    contract's function (aux) whatever the helper wrote; none that main defines itself."""
    names = _functions(written.helper_code)
    aux = written.contract.entry_point if written.contract is not None else "aux"
    if aux not in names:
        names.append(aux)
    own = _functions(written.main_code)
    return [n for n in names if n not in own and n != written.problem.entry_point]


def _functions(code: str) -> list[str]:
    module = parse_or_none(code)
    return list(top_functions(module)) if module is not None else []


def single_contract(written: Written) -> Contract | None:
    """The contract a single agent's own aux is judged by: its problem's (None for a pair)."""
    return None if has_helper(written.scheme) else written.contract or written.problem.contract


@dataclass(frozen=True)
class JobPlan:
    """A sample's sandbox jobs, in order: the program, then (a pair) the helper alone
    (`alone` jobs), aux's contract tests, main with the reference aux, main with stubs."""

    jobs: list[Job]
    alone: int = 0
    contract: bool = False
    reference: bool = False
    stub: bool = False


def plan_jobs(written: Written, timeout: float) -> JobPlan:
    p = written.problem
    jobs = [Job(program=written.program, tests=p.tests, entry_point=p.entry_point, timeout=timeout)]
    if single_contract(written) is not None:
        return _single_plan(written, jobs, timeout)
    if not _pair(written):
        return JobPlan(jobs)
    alone = helper_alone_jobs(p, written.helper_code, timeout)
    jobs += alone
    context, contract = _context(written), written.contract
    has_tests = contract is not None and bool(contract.tests.strip())
    if contract is not None and has_tests:
        jobs.append(Job(program=_program(context, written.helper_code), tests=contract.tests,
                        entry_point=contract.entry_point, timeout=timeout))
    reference = contract.program if contract is not None else None
    if reference is not None:
        jobs.append(Job(program=_program(context, reference, written.main_code), tests=p.tests,
                        entry_point=p.entry_point, timeout=timeout))
    stubs = "\n\n\n".join(f"def {name}(*args, **kwargs):\n{STUB_BODY}"
                           for name in stub_names(written))
    jobs.append(Job(program=_program(context, stubs, written.main_code), tests=p.tests,
                    entry_point=p.entry_point, timeout=timeout))
    return JobPlan(jobs, len(alone), has_tests, reference is not None, True)


def _single_plan(written: Written, jobs: list[Job], timeout: float) -> JobPlan:
    """A single agent's two parts, where it wrote an aux: its aux (lifted out of its entry
    point where it is nested there) on the contract's tests, and its code without its aux
    and with the reference aux, on the problem's tests."""
    p, contract = written.problem, single_contract(written)
    assert contract is not None
    aux_alone = lift(written.main_code, contract.entry_point, p.entry_point)
    if aux_alone is None:
        return JobPlan(jobs)
    context, has_tests = _context(written), bool(contract.tests.strip())
    if has_tests:
        jobs.append(Job(program=_program(context, aux_alone), tests=contract.tests,
                        entry_point=contract.entry_point, timeout=timeout))
    reference = contract.program
    if reference is not None:
        own = without(written.main_code, contract.entry_point, p.entry_point)
        jobs.append(Job(program=_program(context, reference, own), tests=p.tests,
                        entry_point=p.entry_point, timeout=timeout))
    return JobPlan(jobs, contract=has_tests, reference=reference is not None)


def sample_jobs(written: Written, timeout: float) -> list[Job]:
    """The hidden-test job of the program, then (pairs) each agent judged on its own."""
    return plan_jobs(written, timeout).jobs


def _parses(code: str) -> bool:
    return syntax_check(code)[0]


def _names_around(written: Written) -> set[str]:
    """The names the program defines around an agent's code: the problem's imports and given
    functions, the contract's imports."""
    module = parse_or_none(_context(written))
    return names_bound(module) if module is not None else set()


def _helper_names(code: str) -> set[str]:
    """The names a helper's code defines; its `def` lines where it does not parse (main is
    not charged for the helper's syntax error)."""
    module = parse_or_none(code)
    if module is not None:
        return names_bound(module)
    return set(re.findall(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", code, re.M))


def well_formed(written: Written) -> tuple[bool | None, bool]:
    """Whether the helper's part and main's are well formed (`coopcode.code_analysis.parts`). A
    single agent's helper part is its aux (None on a problem without a contract)."""
    p, around = written.problem, _names_around(written)
    main_cut = bool(written.cut & {Role.MAIN, Role.SINGLE})
    if not has_helper(written.scheme):
        contract = single_contract(written)
        main = not part_fault(written.main_code, p.entry_point, around=around, cut=main_cut)
        if contract is None:
            return None, main
        return not part_fault(written.main_code, contract.entry_point, inside=p.entry_point,
                              around=around, cut=main_cut), main
    aux = written.contract.entry_point if written.contract is not None else AUX
    helper = not part_fault(written.helper_code, aux, around=around,
                            cut=Role.HELPER in written.cut)
    main = not part_fault(written.main_code, p.entry_point, cut=main_cut,
                          around=around | _helper_names(written.helper_code) | {aux})
    return helper, main


def agent_checks(written: Written, plan: JobPlan, verdicts: Sequence[Verdict]) -> AgentChecks:
    """What the jobs after the helper-alone ones found (see `coopcode.records.checks`)."""
    at = 1 + plan.alone
    contract = reference = None
    if plan.contract:
        contract, at = round(verdicts[at].pass_fraction, 6), at + 1
    if plan.reference:
        reference, at = round(verdicts[at].pass_fraction, 6), at + 1
    helper_ok, main_ok = well_formed(written)
    if not has_helper(written.scheme):
        return AgentChecks(main_parses=_parses(written.main_code), helper_contract=contract,
                           main_with_reference=reference, helper_well_formed=helper_ok,
                           main_well_formed=main_ok)
    # No helper code at all: main is alone already.
    stub = verdicts[at].passed if plan.stub else verdicts[0].passed
    return AgentChecks(helper_parses=_parses(written.helper_code),
                       main_parses=_parses(written.main_code), helper_contract=contract,
                       main_with_reference=reference, main_with_stub=stub,
                       helper_well_formed=helper_ok, main_well_formed=main_ok)


def reward_input(written: Written, verdict: Verdict, cooperation: Cooperation,
                 checks: AgentChecks = NOT_CHECKED) -> RewardInput:
    p = written.problem
    return RewardInput(verdict=verdict, main_code=written.main_code,
                       helper_code=written.helper_code, program=written.program,
                       entry_point=p.entry_point, scheme=written.scheme, task_id=p.task_id,
                       analysis=cooperation, checks=checks)


def both_needed(passed: bool, cooperation: Cooperation, checks: AgentChecks) -> bool | None:
    """A passing pair sample where the helper's code alone (as the entry point) fails and
    main with the helper replaced by a stub also fails. None: failed, or not measured."""
    if not passed or cooperation.helper_solves is None or checks.main_with_stub is None:
        return None
    return cooperation.helper_solves is False and checks.main_with_stub is False


def judgement(written: Written, verdicts: Sequence[Verdict],
              reward: Reward | str | None = None) -> Judgement:
    """The judgement of a sample from the verdicts of its `sample_jobs`, in order (`reward`
    None: the seed paper's reward for its scheme)."""
    fn = reward if isinstance(reward, Reward) else resolve_reward(reward, written.scheme)
    verdict = verdicts[0]
    plan = plan_jobs(written, 0.0)
    checks = agent_checks(written, plan, verdicts)
    if has_helper(written.scheme):
        cooperation = analyse_cooperation(
            written.helper_code, written.main_code, written.problem.entry_point,
            helper_solves(verdicts[1:1 + plan.alone]) if _pair(written) else False)
        cooperation = replace(cooperation, both_needed=both_needed(verdict.passed, cooperation, checks))
    else:
        cooperation = NO_HELPER
    inp = reward_input(written, verdict, cooperation, checks)
    return Judgement(verdict, cooperation, fn(inp), fn.name, checks, fn.agents(inp))


def judge_all(items: Sequence[Written], sandbox: Sandbox, reward: Reward | str | None = None,
              timeout: float = 5.0) -> list[Judgement]:
    """Judge many samples with one batch of sandbox jobs."""
    per_item = [sample_jobs(w, timeout) for w in items]
    flat = [job for jobs in per_item for job in jobs]
    verdicts = sandbox.run_many(flat)
    out, at = [], 0
    for w, jobs in zip(items, per_item):
        out.append(judgement(w, verdicts[at:at + len(jobs)], reward))
        at += len(jobs)
    return out
