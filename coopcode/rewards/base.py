"""What a reward is: a named function of what the agents wrote and what the sandbox found.

A reward takes a `RewardInput` (each agent's code, the combined program, the sandbox's
verdict, the problem's entry point, and the cooperation analysis of the pair, made on demand
from the syntax tree) and returns a `RewardBreakdown`: named terms and their total. The
terms are what curves, tables and the TUI draw, so a reward declares them up front.

Rewards register themselves by name (`@register(...)`); `get_reward(name)` finds one and
refuses an unknown name in one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from coopcode.code_analysis.cooperation import analyse_cooperation, cooperation_of
from coopcode.core.errors import UserError
from coopcode.records.checks import NOT_CHECKED, AgentChecks
from coopcode.records.cooperation import NO_HELPER, Cooperation, HelperUse
from coopcode.records.reward_terms import RewardBreakdown
from coopcode.schemes import has_helper
from sandbox import Verdict


@dataclass(frozen=True)
class RewardInput:
    """Everything a reward may look at for one sample (one joint action).

    `helper_code` is empty for a single agent (`scheme == "single"`); `main_code` is the
    main (or single) agent's code; `program` the combined program the sandbox ran.
    `analysis` is the pair's cooperation as the judging path found it (with `helper_solves`
    from running the helper alone); without it, `cooperation` is read from the code alone
    (`helper_solves` None). `checks` is each agent's code judged on its own
    (`coopcode.records.checks`: parses alone, each part well formed, aux's contract tests,
    main with the reference aux, main with a stub helper; for a single agent on a problem
    with a contract, its own aux and its entry point with the reference aux).
    """

    verdict: Verdict
    main_code: str
    helper_code: str = ""
    program: str = ""
    entry_point: str = ""
    scheme: str = "sequential"
    task_id: str = ""
    analysis: Cooperation | None = field(default=None, compare=False)
    checks: AgentChecks = field(default=NOT_CHECKED, compare=False)

    @property
    def single(self) -> bool:
        return not has_helper(self.scheme)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RewardInput:
        """The input of a recorded sample (a bench's samples.jsonl line, a solve attempt)."""
        verdict = record.get("verdict")
        return cls(verdict=Verdict.from_dict(verdict) if isinstance(verdict, dict)
                   else Verdict(status="error"),
                   main_code=str(record.get("main_code") or ""),
                   helper_code=str(record.get("helper_code") or ""),
                   program=str(record.get("program") or ""),
                   entry_point=str(record.get("entry_point") or ""),
                   scheme=str(record.get("scheme") or "sequential"),
                   task_id=str(record.get("task_id") or ""),
                   # what the record says of the helper run alone; the rest from the code
                   analysis=cooperation_of(record) if record.get("helper_code") else None,
                   checks=AgentChecks.from_record(record.get("agents")) or NOT_CHECKED)

    @cached_property
    def cooperation(self) -> Cooperation:
        """How the pair cooperated (`coopcode.code_analysis.cooperation.Cooperation`)."""
        if self.analysis is not None:
            return self.analysis
        if self.single:
            return NO_HELPER
        return analyse_cooperation(self.helper_code, self.main_code, self.entry_point)

    @property
    def use(self) -> HelperUse:
        """Which helper functions are live and how main uses them, from the syntax tree."""
        return self.cooperation.use

    @property
    def patterns(self) -> tuple[str, ...]:
        """The pair's cooperation patterns (`coopcode.code_analysis.patterns`)."""
        return self.cooperation.patterns


RewardFn = Callable[[RewardInput], RewardBreakdown]
AgentsFn = Callable[[RewardInput], dict[str, float]]


@dataclass(frozen=True)
class Reward:
    """A registered reward: its name, the function, the terms it may return (in order: a term
    it did not declare is refused) and its formula in one line (the bench report's)."""

    name: str
    fn: RewardFn
    terms: tuple[str, ...]
    summary: str
    # Who gets what in MAGRPO: "joint" (every agent the joint reward), "counterfactual" (the
    # helper its contribution: the pair's reward minus what main scores without the helper;
    # main the joint reward; see coopcode.training.rollout) or "own" (each agent what
    # `agents_fn` says it earned itself).
    credit: str = "joint"
    agents_fn: AgentsFn | None = None

    def __call__(self, inp: RewardInput) -> RewardBreakdown:
        score = self.fn(inp)
        extra = [t for t in score if t not in self.terms]
        if extra:  # the tables and curves draw the declared terms: a stray one would vanish
            raise ValueError(f"reward {self.name!r} returned term {extra[0]!r}, not among the "
                             f"terms it registered: {', '.join(self.terms)}")
        return score

    def agents(self, inp: RewardInput) -> dict[str, float]:
        """Each agent's own reward (role -> value) for a reward with `credit="own"`; empty
        otherwise (every agent is then paid the joint reward, or counterfactually)."""
        if self.credit != "own" or self.agents_fn is None or inp.single:
            return {}
        return {role: round(value, 6) for role, value in self.agents_fn(inp).items()}


REWARDS: dict[str, Reward] = {}


CREDITS = ("joint", "counterfactual", "own")


def register(name: str, terms: tuple[str, ...], summary: str, *,
             credit: str = "joint", agents: AgentsFn | None = None) -> Callable[[RewardFn], RewardFn]:
    """Register a reward function under `name` (its module is imported by the package);
    `credit` says how MAGRPO shares it between the agents (`Reward.credit`); a reward with
    `credit="own"` says each agent's own reward with `agents`."""
    if credit not in CREDITS:
        raise ValueError(f"credit {credit!r}: use one of {', '.join(CREDITS)}")
    if (credit == "own") != (agents is not None):
        raise ValueError("a reward pays each agent its own (credit='own') exactly when it says "
                         "what each earned (agents=...)")

    def decorate(fn: RewardFn) -> RewardFn:
        if name in REWARDS:
            raise ValueError(f"reward {name!r} is registered twice")
        REWARDS[name] = Reward(name, fn, terms, summary, credit=credit, agents_fn=agents)
        return fn

    return decorate


def reward_names() -> tuple[str, ...]:
    return tuple(REWARDS)


def get_reward(name: str, flag: str = "--reward") -> Reward:
    """The registered reward `name`; UserError (one line) for an unknown one."""
    if name not in REWARDS:
        raise UserError(f"unknown reward {name!r} for {flag}: use one of {', '.join(REWARDS)}")
    return REWARDS[name]


def default_reward_name(scheme: str) -> str:
    """The reward a run uses when none is named: the seed paper's for its number of agents."""
    return "seed" if has_helper(scheme) else "seed-grpo"


def resolve_reward(name: str | None, scheme: str) -> Reward:
    return get_reward(name or default_reward_name(scheme))


def term_keys(metrics: Mapping[str, Any] | Iterable[Mapping[str, Any]]) -> list[str]:
    """The `reward/<term>` metric keys of a training step (or of several), in the reward's
    order: what curves draw besides `reward/mean` (a run's reward decides its terms)."""
    records = [metrics] if isinstance(metrics, Mapping) else list(metrics)
    keys = dict.fromkeys(k for r in records for k in r
                         if k.startswith("reward/") and k not in ("reward/mean", "reward/std"))
    return list(keys)


def format_terms(reward: Mapping[str, Any], digits: int = 2) -> str:
    """`syntax 0.2 + runs 0.3 + tests 0.5` (zero terms left out; `- 0.5` for a penalty)."""
    out = ""
    for k, v in reward.items():
        if k == "total" or not isinstance(v, int | float) or v == 0:
            continue
        sign = "-" if v < 0 else "+"
        out += f" {sign} {k} {abs(v):.{digits}g}" if out else f"{'-' if v < 0 else ''}{k} {abs(v):.{digits}g}"
    return out or "0"


def record_reward(record: Mapping[str, Any], name: str | None = None) -> RewardBreakdown:
    """A recorded sample's reward under the reward `name` (None: the default for its scheme):
    the recorded breakdown when it was scored with that reward, else scored again from the
    recorded code and verdict (no sampling, no execution). A record without a `reward_name`
    was scored with its scheme's default."""
    scheme = str(record.get("scheme") or "sequential")
    reward = resolve_reward(name, scheme)
    recorded = record.get("reward")
    scored_with = record.get("reward_name") or default_reward_name(scheme)
    if scored_with == reward.name and isinstance(recorded, dict):
        return RewardBreakdown.from_dict(recorded)
    return reward(RewardInput.from_record(record))
