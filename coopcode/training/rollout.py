"""Rollouts: sample each agent's group, form joint actions, score them, revise (multi-turn).

A rollout runs the same schemes, prompts and code extraction as `solve` and `bench`, through
the same scheduler (`coopcode.collaboration.scheduler`), so an adapter trained here sees at `solve`/`bench`
time exactly the prompts it was trained on, and every problem of a step is in flight at once.

Per problem, a node's G (aligned) or G x G (cross) joint actions are samples of the scheme,
each with its own seeds; where two joint actions share an agent's completion (cross mode:
helper i appears with every main j) their asks are identical and the scheduler generates it
once. Turn 1:
- `single` (GRPO): G samples of one agent.
- `parallel`: G helper and G main samples from their own prompts; aligned pairs sample g
  with sample g, cross takes all G x G pairs.
- `sequential`: G helper samples; aligned gives main sample g the code of helper sample g;
  cross gives every helper sample G main samples (G x G joint actions; each main group's
  baseline is the mean over the mains that saw the same helper).
A joint action of a turn below H leads (unless its node's mean reward reaches
`early_stop_reward`) to a child node where both agents revise from the feedback of the
combined program on the problem's public examples; revisions are sampled in parallel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from coopcode.code_analysis.program import combine
from coopcode.collaboration.judging import Written, cut_roles, judge_all
from coopcode.collaboration.sampling import sampling_params
from coopcode.collaboration.scheduler import SampleSpec, Scheduler
from coopcode.engines import Engine
from coopcode.problems import Problem
from coopcode.records.attempts import Attempt, feedback_text, sample_seed
from coopcode.records.cooperation import Cooperation
from coopcode.records.vocabulary import Role
from coopcode.rewards import Reward, RewardBreakdown
from coopcode.schemes import (
    ROLE_ADAPTERS,
    PromptBook,
    SampleState,
    adapter_of,
    get_scheme,
    main_role,
    public_check,
    scheme_contract,
)
from coopcode.training.config import TrainConfig
from coopcode.training.tree import (
    Alone,
    JointAction,
    Node,
    Sample,
    aligned_members,
    cross_members,
    mean,
)
from sandbox import Sandbox, Verdict


@dataclass
class Scored:
    """What a scorer says about one joint action."""

    reward: RewardBreakdown
    passed: bool = False
    verdict: Verdict | None = None
    cooperation: Cooperation | None = None  # how the pair cooperated (None: not judged)
    agent_rewards: dict[str, float] = field(default_factory=dict)  # a reward paying each its own


class Scorer(Protocol):
    """Rewards for joint actions: one call per turn for a whole step, so it can batch."""

    def __call__(self, items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]: ...


@runtime_checkable
class AloneScorer(Scorer, Protocol):
    """A scorer that also judges main's answers written alone, (problem, code) each:
    what counterfactual credit needs."""

    def alone(self, items: Sequence[tuple[Problem, str]]) -> list[Scored]: ...


class ExecutionScorer:
    """The default: each joint action judged as the bench judges a sample
    (`coopcode.collaboration.judging`: the hidden tests, the helper alone, the reward)."""

    def __init__(self, sandbox: Sandbox, reward: Reward, timeout: float = 5.0, *,
                 scheme: str = "sequential") -> None:
        self.sandbox, self.reward, self.timeout = sandbox, reward, timeout
        self.scheme = scheme

    def __call__(self, items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]:
        written = []
        for p, a, node in items:
            codes = {r: node.samples[r][i].code for r, i in a.members.items()}
            # a part cut at the token budget earns no syntax credit (`own`)
            cut = cut_roles((r, node.samples[r][i].finish_reason) for r, i in a.members.items())
            written.append(Written(p, self.scheme, codes[main_role(codes)],
                                   codes.get(Role.HELPER, ""), a.program,
                                   scheme_contract(p, self.scheme, a.contract), cut))
        return [Scored(j.reward, j.verdict.passed, j.verdict, j.cooperation, j.agent_rewards)
                for j in judge_all(written, self.sandbox, self.reward, self.timeout)]

    def alone(self, items: Sequence[tuple[Problem, str]]) -> list[Scored]:
        """Main's answers written alone (problem, code), judged as one agent by the same reward."""
        written = [Written(p, "single", code, "", combine(p.prompt, p.entry_point, "", code).text)
                   for p, code in items]
        return [Scored(j.reward, j.verdict.passed, j.verdict)
                for j in judge_all(written, self.sandbox, self.reward, self.timeout)]


def output_scorer(fn: Callable[[Problem, JointAction, Node], float]) -> Scorer:
    """A scorer from a plain function of the outputs (no execution): for tests and shaping.
    Its one term is `score`."""
    def score(items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]:
        return [Scored(RewardBreakdown(score=float(fn(p, a, n)))) for p, a, n in items]

    return score


@dataclass
class ProblemRollout:
    problem: Problem
    root: Node


@dataclass
class RolloutStats:
    gen_seconds: float = 0.0
    gen_tokens: int = 0
    score_seconds: float = 0.0
    samples: int = 0
    resampled: int = 0  # first-turn nodes sampled again because every group scored alike
    still_constant: int = 0  # of those, the ones that scored alike on their last draw too
    alone_samples: int = 0  # counterfactual credit: main's answers without the helper (not trained on)
    finish: dict[str, int] = field(default_factory=dict)  # completions by `FinishReason`


@dataclass
class _Open:
    """A node waiting for samples, with what its prompts need."""

    problem: Problem
    node: Node
    parent: JointAction | None = None
    parent_samples: dict[str, Sample] | None = None
    alone: dict[int, SampleState] = field(default_factory=dict)  # joint action -> main alone
    draw: int = 0  # how many times this node was sampled again because it scored alike


# role -> (slot, index): which seed stream (slot) and which draw of it (index) a joint
# action's completion of that role comes from. Equal pairs mean the same completion.
Pick = dict[str, tuple[int, int]]


class RolloutBuilder:
    """Builds the rollout trees of one training step."""

    def __init__(self, engine: Engine, config: TrainConfig, scorer: Scorer,
                 sandbox: Sandbox | None = None, cancel: threading.Event | None = None,
                 concurrency: int | None = None) -> None:
        if config.turns > 1 and sandbox is None:
            raise ValueError("multi-turn training needs a sandbox for public-example feedback")
        self.engine, self.config, self.scorer, self.sandbox = engine, config, scorer, sandbox
        self.cancel = cancel or threading.Event()
        self.roles = config.roles
        self.scheme = get_scheme(config.collab_scheme)
        self.params = sampling_params(config)
        self.book = PromptBook(engine)
        self.scheduler = Scheduler(engine, sandbox, concurrency=concurrency, cancel=self.cancel,
                                   feedback_timeout=config.timeout)
        # What the step is doing, for a live status line (`coopcode.training.run.StepStatus`):
        # called with ("sampling", tokens sampled so far in this step), ("scoring", tokens),
        # ("updating", tokens). None: nobody listens, and the engine streams no deltas.
        self.on_phase: Callable[[str, int], None] | None = None
        self._tokens = 0
        # Counterfactual credit: each first-turn joint action also gets main's answer without
        # the helper; the helper is paid the pair's reward minus it (coopcode.rewards.credit).
        self.counterfactual = config.credit_mode == "counterfactual" and Role.HELPER in self.roles
        self.alone_scorer = scorer if isinstance(scorer, AloneScorer) else None
        if self.counterfactual and self.alone_scorer is None:
            raise ValueError("counterfactual credit needs a scorer that can judge main alone "
                             "(ExecutionScorer)")

    # -- which completions make which joint actions -----------------------------------------

    def _picks(self, first_turn: bool) -> list[Pick]:
        """The joint actions of a node, as the (slot, index) of each role's completion."""
        g, cross = self.config.group_size, self.config.joint == "cross"
        if first_turn and self.scheme.main_sees_helper:
            # mains see helper i's code: their seed stream is helper i's (slot i)
            if cross:
                return [{Role.HELPER: (0, i), Role.MAIN: (i, j)} for i in range(g) for j in range(g)]
            return [{Role.HELPER: (0, i), Role.MAIN: (i, 0)} for i in range(g)]
        members = cross_members(self.roles, g) if cross else aligned_members(self.roles, g)
        return [{r: (0, i) for r, i in m.items()} for m in members]

    def _group(self, role: str, slot: int) -> int:
        """Siblings (one baseline) are the completions sampled from the same prompt."""
        cross_main = self.config.joint == "cross" and self.scheme.main_sees_helper
        return slot if role == Role.MAIN and cross_main else 0

    def _spec(self, op: _Open, pick: Pick, step: int) -> SampleSpec:
        cfg, node = self.config, op.node

        def seeds(role: str, turn: int) -> tuple[int, int]:
            # A role that is not trained (the planner's contract): one draw per problem, so
            # every joint action of the group works to the same contract.
            slot, index = pick.get(role, (0, 0))
            # A seed per (step, problem, role, node, slot, draw): a resumed run regenerates the
            # same samples, and no two seed streams share random numbers.
            return sample_seed(cfg.seed, _stream("train", op.draw), step, op.problem.task_id,
                               role, node.turn, node.path, slot), index

        state = None
        if op.parent is not None and op.parent_samples is not None:
            parents = op.parent_samples
            attempt = Attempt(op.problem.task_id, 0, self.scheme.name, feedback=op.parent.feedback)
            attempt.helper_code = parents[Role.HELPER].code if Role.HELPER in parents else ""
            attempt.main_code = parents[main_role(parents)].code
            attempt.contract = op.parent.contract  # revisions keep the contract they worked to
            # Every sample a rollout made carries its lineage's first prompt.
            firsts = {r: s.first_prompt for r, s in parents.items() if s.first_prompt is not None}
            state = SampleState(op.problem, 0, self.book, attempt, first_prompts=firsts)
        return SampleSpec(op.problem, 0, self.scheme, self.params, seeds, ROLE_ADAPTERS,
                          turns=node.turn, first_turn=node.turn, state=state, key=(op, pick))

    def _alone_spec(self, op: _Open, j: int, step: int) -> SampleSpec:
        """Main's answer for joint action j without the helper: the single-agent prompt with
        main's adapter, its own seed stream."""
        cfg, node = self.config, op.node

        def seeds(role: str, turn: int) -> tuple[int, int]:
            return sample_seed(cfg.seed, _stream("train", op.draw), step, op.problem.task_id,
                               "alone", node.turn, node.path, j), 0

        return SampleSpec(op.problem, 0, get_scheme("single"), self.params, seeds,
                          {Role.SINGLE: adapter_of(Role.SINGLE)}, key=(op, ("alone", j)))

    # -- generation -------------------------------------------------------------------------

    def _generate(self, opens: list[_Open], step: int, stats: RolloutStats) -> None:
        """Every node's joint actions through the scheduler, at once; fills samples and actions
        (and, for counterfactual credit, main's answers alone, in the same batch)."""
        first = bool(opens) and opens[0].node.turn == 1
        picks = self._picks(first_turn=first) if opens else []
        specs = [self._spec(op, pick, step) for op in opens for pick in picks]
        if self.counterfactual and first:
            specs += [self._alone_spec(op, j, step) for op in opens for j in range(len(picks))]
        done: dict[int, list[tuple[Pick, SampleState]]] = {id(op): [] for op in opens}

        def on_done(state: SampleState, _verdicts: list[Verdict]) -> None:
            op, pick = state.key
            if isinstance(pick, tuple):  # ("alone", j)
                op.alone[pick[1]] = state
                return
            done[id(op)].append((pick, state))

        started = time.time()
        self.scheduler.run(specs, on_done)
        stats.gen_seconds += time.time() - started
        if self.cancel.is_set():
            return
        for op in opens:
            by_pick = {tuple(sorted(p.items())): st for p, st in done[id(op)]}
            ordered = [(p, by_pick[tuple(sorted(p.items()))]) for p in picks]
            self._fill(op, ordered, stats)

    def _fill(self, op: _Open, ordered: list[tuple[Pick, SampleState]], stats: RolloutStats) -> None:
        samples: dict[str, list[Sample]] = {r: [] for r in self.roles}
        index_of: dict[tuple[str, tuple[int, int]], int] = {}
        op.node.actions = []
        for pick, state in ordered:
            members = {}
            outputs = {ask.role: (ask, out) for ask, out in state.asked}
            for role in self.roles:
                key = (role, pick[role])
                if key not in index_of:
                    ask, out = outputs[role]
                    first = ask.prompt if ask.first else state.first_prompts[role]
                    index_of[key] = len(samples[role])
                    samples[role].append(Sample(
                        role=role, group=self._group(role, pick[role][0]),
                        prompt_ids=self.engine.encode(ask.prompt.text),
                        completion_ids=list(out.token_ids), text=out.raw, code=out.code,
                        finish_reason=out.finish_reason, first_prompt=first))
                    stats.gen_tokens += len(out.token_ids)
                    stats.samples += 1
                    stats.finish[out.finish_reason] = stats.finish.get(out.finish_reason, 0) + 1
                members[role] = index_of[key]
            # the program the scheme's steps combined (`sample_steps`), as bench and solve run it
            program = state.attempt.program
            op.node.actions.append(JointAction(members, program=program.text if program else "",
                                               contract=state.attempt.contract))
        op.node.samples = samples

    # -- scoring and feedback ---------------------------------------------------------------

    def _score(self, opens: list[_Open], stats: RolloutStats) -> None:
        items = [(op.problem, a, op.node) for op in opens for a in op.node.actions]
        started = time.time()
        scored = self.scorer(items)
        stats.score_seconds += time.time() - started
        for (_, a, _), s in zip(items, scored):
            a.reward, a.passed, a.cooperation = s.reward, s.passed, s.cooperation
            if s.agent_rewards:  # a reward that pays each agent its own (credit "own")
                a.agent_rewards = dict(s.agent_rewards)
        if any(op.alone for op in opens):
            started = time.time()
            self._score_alone(opens, stats)
            stats.score_seconds += time.time() - started
        for op in opens:
            op.node.rewards = [a.reward.total if a.reward else 0.0 for a in op.node.actions]

    def _score_alone(self, opens: list[_Open], stats: RolloutStats) -> None:
        """Counterfactual credit: judge main's answers alone; the helper's reward is the pair's
        minus main's alone, main's the pair's."""
        pending = [(op, j, st) for op in opens for j, st in sorted(op.alone.items())]
        outputs = [st.asked[-1][1] for _op, _j, st in pending]
        assert self.alone_scorer is not None  # counterfactual credit is refused without one
        scored = self.alone_scorer.alone(
            [(op.problem, out.code) for (op, _j, _st), out in zip(pending, outputs)])
        for (op, j, _st), out, s in zip(pending, outputs, scored):
            a = op.node.actions[j]
            a.alone = Alone(out.code, s.reward, s.passed, len(out.token_ids))
            joint = a.reward.total if a.reward else 0.0
            a.agent_rewards = {Role.HELPER: round(joint - s.reward.total, 6), Role.MAIN: joint}
            stats.alone_samples += 1
            stats.gen_tokens += len(out.token_ids)
        for op in opens:
            op.alone.clear()

    def _expand(self, opens: list[_Open], stats: RolloutStats) -> list[_Open]:
        """Child nodes for the next turn, with feedback from the public examples."""
        stop_at = self.config.early_stop_reward
        parents = [op for op in opens if stop_at is None or mean(op.node.rewards) < stop_at]
        pending = [(op, j, a) for op in parents for j, a in enumerate(op.node.actions)]
        with_tests = [(op, a) for op, _, a in pending if op.problem.public_tests]
        if with_tests:
            assert self.sandbox is not None
            started = time.time()
            verdicts = self.sandbox.run_many([public_check(op.problem, a.program, self.config.timeout)
                                              for op, a in with_tests])
            stats.score_seconds += time.time() - started
            for (_, a), v in zip(with_tests, verdicts):
                a.feedback = feedback_text(v)
        children = []
        for op, j, a in pending:
            child = Node(turn=op.node.turn + 1, path=(*op.node.path, j))
            op.node.children[j] = child
            lineage = {r: op.node.samples[r][i] for r, i in a.members.items()}
            children.append(_Open(op.problem, child, a, lineage))
        return children

    # -- a step -----------------------------------------------------------------------------

    def run(self, problems: Sequence[Problem], step: int) -> tuple[list[ProblemRollout], RolloutStats]:
        """The rollout trees for one step's problems (rewards filled in, returns not yet)."""
        stats = RolloutStats()
        roots = [ProblemRollout(p, Node(turn=1)) for p in problems]
        opens = [_Open(r.problem, r.root) for r in roots]
        self._tokens = 0
        self.scheduler.on_delta = self._count if self.on_phase is not None else None
        for turn in range(1, self.config.turns + 1):
            if not opens:
                break
            self._phase("sampling")
            self._generate(opens, step, stats)
            if self.cancel.is_set():
                break  # cancelled completions are cut short: never score or train on them
            self._phase("scoring")
            self._score(opens, stats)
            if turn == 1:
                self._resample_constant(opens, step, stats)
            if turn < self.config.turns:
                opens = self._expand(opens, stats)
        if not self.cancel.is_set():
            self._phase("updating")  # what the trainer does with the rollouts next
        return roots, stats

    def _resample_constant(self, opens: list[_Open], step: int, stats: RolloutStats) -> None:
        """Sample again, up to `resample_constant_groups` times, the first-turn nodes where
        every agent's completions scored alike (DAPO's dynamic sampling): their advantages
        are all 0, so the step would learn nothing from the problem. Each draw has seeds of
        its own; the last draw is kept whatever it scored."""
        for draw in range(1, self.config.resample_constant_groups + 1):
            again = [op for op in opens if scored_alike(op.node)]
            if not again or self.cancel.is_set():
                break
            if draw == 1:
                stats.resampled += len(again)
            for op in again:
                op.draw = draw
                op.node.samples, op.node.actions, op.node.rewards = {}, [], []
            self._phase("sampling")
            self._generate(again, step, stats)
            if self.cancel.is_set():
                return
            self._phase("scoring")
            self._score(again, stats)
        if self.config.resample_constant_groups:
            stats.still_constant += sum(op.draw > 0 and scored_alike(op.node) for op in opens)

    def _phase(self, phase: str) -> None:
        if self.on_phase is not None:
            self.on_phase(phase, self._tokens)

    def _count(self, _state: SampleState, _role: str, _turn: int, _text: str, tokens: int) -> None:
        """Scheduler on_delta: tokens sampled so far this step, said as they come."""
        if tokens and self.on_phase is not None:
            self._tokens += tokens
            self.on_phase("sampling", self._tokens)


def _stream(name: str, draw: int) -> str:
    """The seed stream of a node's `draw`-th sampling (the first keeps the plain name, so
    runs without resampling draw what they always drew)."""
    return name if draw == 0 else f"{name}-draw{draw}"


def scored_alike(node: Node) -> bool:
    """Whether every agent's completions in `node` earned the same (its own reward where the
    reward pays each agent its own, else the joint one): no advantage anywhere."""
    if not node.actions:
        return False
    for role in node.samples:
        values = [a.agent_rewards.get(role, r) for a, r in zip(node.actions, node.rewards)]
        if max(values) - min(values) > 1e-9:
            return False
    return True


def describe(sample: Sample) -> dict[str, Any]:
    """A sample for logs (the text, not the ids)."""
    return {"role": sample.role, "code": sample.code, "finish": sample.finish_reason,
            "tokens": len(sample.completion_ids), "advantage": round(sample.advantage, 4)}
