"""Rollouts: sample each agent's group, form joint actions, score them, revise (multi-turn).

Prompts, stop strings and code extraction are `coopcode.collab`'s, so an adapter trained here
sees at `solve`/`bench` time exactly the prompts it was trained on.

Per problem and turn 1:
- `single` (GRPO): G samples of one agent.
- `parallel`: G helper and G main samples from their own prompts; aligned pairs sample g
  with sample g, cross takes all G x G pairs.
- `sequential`: G helper samples; aligned gives main sample g the code of helper sample g;
  cross gives every helper sample G main samples (G x G joint actions; each main group's
  baseline is the mean over the mains that saw the same helper).
A joint action of a turn below H leads (unless its node's mean reward reaches
`early_stop_reward`) to a child node where both agents revise from the feedback of the
combined program on the problem's public examples; revisions are sampled in parallel.

Everything of one step (all problems, all nodes of a turn) goes to the engine and to the
sandbox together, so both can batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from coopcode import prompts
from coopcode.code import combine
from coopcode.collab import Collaboration, feedback_text, sample_seed
from coopcode.collab import _Ask as _CollabAsk
from coopcode.engines import Engine, GenerationRequest, SamplingParams
from coopcode.problems import Problem
from coopcode.rewards import RewardBreakdown, RewardFn
from coopcode.train.config import TrainConfig
from coopcode.train.tree import JointAction, Node, Sample, aligned_members, cross_members, mean
from sandbox import Job, Sandbox, Verdict

ADAPTER_OF_ROLE = {"helper": "helper", "main": "main", "single": "main"}


@dataclass
class Scored:
    """What a scorer says about one joint action."""

    reward: RewardBreakdown
    passed: bool = False
    verdict: Verdict | None = None


class Scorer(Protocol):
    """Rewards for joint actions: one call per turn for a whole step, so it can batch."""

    def __call__(self, items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]: ...


class ExecutionScorer:
    """The default: run each combined program against the hidden tests in the sandbox."""

    def __init__(self, sandbox: Sandbox, reward_fn: RewardFn, timeout: float = 5.0) -> None:
        self.sandbox, self.reward_fn, self.timeout = sandbox, reward_fn, timeout

    def __call__(self, items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]:
        jobs = [Job(program=a.program, tests=p.tests, entry_point=p.entry_point,
                    timeout=self.timeout) for p, a, _ in items]
        verdicts = self.sandbox.run_many(jobs)
        return [Scored(self.reward_fn(v), v.passed, v) for v in verdicts]


def output_scorer(fn: Callable[[Problem, JointAction, Node], float]) -> Scorer:
    """A scorer from a plain function of the outputs (no execution): for tests and shaping."""
    def score(items: Sequence[tuple[Problem, JointAction, Node]]) -> list[Scored]:
        return [Scored(RewardBreakdown(tests=float(fn(p, a, n)))) for p, a, n in items]

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
    finish: dict[str, int] = field(default_factory=dict)


@dataclass
class _Ask:
    """Samples wanted from one prompt: n of them, for one role of one open node."""

    open: _Open
    role: str
    prompt: prompts.Prompt
    n: int
    slot: int = 0  # tells apart asks of the same node and role (sequential: helper index)
    lineage: Sample | None = None  # the sample being revised (multi-turn)


@dataclass
class _Open:
    """A node waiting for samples, with what its prompts need."""

    problem: Problem
    node: Node
    parent: JointAction | None = None
    parent_samples: dict[str, Sample] | None = None


class RolloutBuilder:
    """Builds the rollout trees of one training step."""

    def __init__(self, engine: Engine, config: TrainConfig, scorer: Scorer,
                 sandbox: Sandbox | None = None, cancel: threading.Event | None = None) -> None:
        if config.turns > 1 and sandbox is None:
            raise ValueError("multi-turn training needs a sandbox for public-example feedback")
        self.engine, self.config, self.scorer, self.sandbox = engine, config, scorer, sandbox
        self.cancel = cancel
        self.roles = config.roles
        self.params = SamplingParams(max_new_tokens=config.max_new_tokens,
                                     temperature=config.temperature, top_p=config.top_p)
        # Used for its prompts and extraction only: the same as solve/bench use.
        self.collab = Collaboration(engine, scheme=config.collab_scheme, params=self.params,
                                    helper_adapter="helper", main_adapter="main")

    # -- generation -------------------------------------------------------------------------

    def _generate(self, asks: list[_Ask], step: int, stats: RolloutStats) -> list[list[Sample]]:
        """One engine call for all asks; the samples of each ask, in order."""
        requests = []
        for a in asks:
            # A seed per (step, problem, role, node, slot): a resumed run regenerates the same
            # samples, and no two asks share random numbers.
            seed = sample_seed(self.config.seed, "train", step, a.open.problem.task_id, a.role,
                               a.open.node.turn, a.open.node.path, a.slot)
            requests.append(GenerationRequest(
                prompt=a.prompt.text,
                params=self.params.with_(n=a.n, stop=a.prompt.stop, seed=seed),
                adapter=ADAPTER_OF_ROLE[a.role],
            ))
        started = time.time()
        results = self.engine.generate(requests, cancel=self.cancel)
        stats.gen_seconds += time.time() - started
        out = []
        for a, completions in zip(asks, results):
            prompt_ids = self.engine.encode(a.prompt.text)  # type: ignore[attr-defined]
            first = a.lineage.first_prompt if a.lineage is not None else a.prompt
            how = _CollabAsk(0, a.role, a.prompt, None, a.open.node.turn)
            samples = []
            for c in completions:
                samples.append(Sample(role=a.role, group=0, prompt_ids=prompt_ids,
                                      completion_ids=list(c.token_ids), text=c.text,
                                      code=self.collab._extract(a.open.problem, how, c.text),
                                      finish_reason=c.finish_reason, first_prompt=first))
                stats.gen_tokens += len(c.token_ids)
                stats.samples += 1
                stats.finish[c.finish_reason] = stats.finish.get(c.finish_reason, 0) + 1
            out.append(samples)
        return out

    def _first_turn(self, opens: list[_Open], step: int, stats: RolloutStats) -> None:
        g, cfg = self.config.group_size, self.config
        if cfg.collab_scheme == "single":
            asks = [_Ask(op, "single", self.collab._first_prompts(op.problem, "single", None), g)
                    for op in opens]
            for op, samples in zip(opens, self._generate(asks, step, stats)):
                op.node.samples = {"single": samples}
                op.node.actions = [JointAction({"single": j}) for j in range(g)]
            return
        helper_asks = [_Ask(op, "helper", self.collab._first_prompts(op.problem, "helper", None), g)
                       for op in opens]
        if cfg.collab_scheme == "parallel":
            main_asks = [_Ask(op, "main", self.collab._first_prompts(op.problem, "main", None), g)
                         for op in opens]
            both = self._generate(helper_asks + main_asks, step, stats)
            for op, helpers, parallel_mains in zip(opens, both[:len(opens)], both[len(opens):]):
                op.node.samples = {"helper": helpers, "main": parallel_mains}
                op.node.actions = [JointAction(m) for m in self._pairs(g)]
            return
        # sequential: mains see the helper's code
        for op, helpers in zip(opens, self._generate(helper_asks, step, stats)):
            op.node.samples = {"helper": helpers}
        main_asks = []
        for op in opens:
            for i, h in enumerate(op.node.samples["helper"]):
                prompt = self.collab._first_prompts(op.problem, "main", h.code)
                main_asks.append(_Ask(op, "main", prompt, g if cfg.joint == "cross" else 1, slot=i))
        got = iter(self._generate(main_asks, step, stats))
        for op in opens:
            mains: list[Sample] = []
            for i in range(g):
                for s in next(got):
                    # cross: the G mains that saw helper i are siblings; aligned: all G are
                    s.group = i if cfg.joint == "cross" else 0
                    mains.append(s)
            op.node.samples["main"] = mains
            if cfg.joint == "cross":
                op.node.actions = [JointAction({"helper": i, "main": i * g + j})
                                   for i in range(g) for j in range(g)]
            else:
                op.node.actions = [JointAction({"helper": j, "main": j}) for j in range(g)]

    def _pairs(self, g: int) -> list[dict[str, int]]:
        if self.config.joint == "cross":
            return cross_members(self.roles, g)
        return aligned_members(self.roles, g)

    def _revision_turn(self, opens: list[_Open], step: int, stats: RolloutStats) -> None:
        """Children: every agent revises its code in the parent joint action, G times."""
        g = self.config.group_size
        asks = []
        for op in opens:
            assert op.parent is not None and op.parent_samples is not None
            for role in self.roles:
                own = op.parent_samples[role]
                peer = None
                if role != "single":
                    other = "main" if role == "helper" else "helper"
                    peer = op.parent_samples[other].code
                prompt = self.collab._revision_prompt(op.problem, role, own.first_prompt,
                                                      own.code, peer, op.parent.feedback)
                asks.append(_Ask(op, role, prompt, g, lineage=own))
        got = iter(self._generate(asks, step, stats))
        for op in opens:
            op.node.samples = {role: next(got) for role in self.roles}
            op.node.actions = [JointAction(m) for m in self._pairs(g)]

    # -- scoring and feedback ---------------------------------------------------------------

    def _score(self, opens: list[_Open], stats: RolloutStats) -> None:
        items = []
        for op in opens:
            for a in op.node.actions:
                codes = {r: op.node.samples[r][i].code for r, i in a.members.items()}
                helper = codes.get("helper", "")
                main = codes.get("main", codes.get("single", ""))
                a.program = combine(op.problem.prompt, op.problem.entry_point, helper, main).text
                items.append((op.problem, a, op.node))
        started = time.time()
        scored = self.scorer(items)
        stats.score_seconds += time.time() - started
        for (_, a, _), s in zip(items, scored):
            a.reward, a.passed = s.reward, s.passed
        for op in opens:
            op.node.rewards = [a.reward.total if a.reward else 0.0 for a in op.node.actions]

    def _expand(self, opens: list[_Open], stats: RolloutStats) -> list[_Open]:
        """Child nodes for the next turn, with feedback from the public examples."""
        stop_at = self.config.early_stop_reward
        parents = [op for op in opens if stop_at is None or mean(op.node.rewards) < stop_at]
        pending = [(op, j, a) for op in parents for j, a in enumerate(op.node.actions)]
        with_tests = [(op, a) for op, _, a in pending if op.problem.public_tests]
        if with_tests:
            assert self.sandbox is not None
            started = time.time()
            verdicts = self.sandbox.run_many([
                Job(program=a.program, tests=op.problem.public_tests,
                    entry_point=op.problem.entry_point, timeout=self.config.timeout)
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
        for turn in range(1, self.config.turns + 1):
            if not opens:
                break
            if turn == 1:
                self._first_turn(opens, step, stats)
            else:
                self._revision_turn(opens, step, stats)
            if self.cancel is not None and self.cancel.is_set():
                break  # cancelled completions are cut short: never score or train on them
            self._score(opens, stats)
            if turn < self.config.turns:
                opens = self._expand(opens, stats)
        return roots, stats


def describe(sample: Sample) -> dict[str, Any]:
    """A sample for logs (the text, not the ids)."""
    return {"role": sample.role, "code": sample.code, "finish": sample.finish_reason,
            "tokens": len(sample.completion_ids), "advantage": round(sample.advantage, 4)}
