"""The rollout tree and its math: joint actions, discounted returns, group advantages.

A `Node` is one decision point: every agent has sampled completions (`samples[role]`), which
form joint actions (`actions`), each with a reward. With several turns, a joint action can
lead to a child node in which both agents revise their code after feedback; its return is
its reward plus gamma times the mean return of the child's joint actions.

A completion's return is the mean return of the joint actions it takes part in (one in
aligned mode, G in cross mode; the reference sums them, which only scales the advantages
by G). Its advantage is that return minus the mean over its *siblings*: the completions of
the same agent sampled from the same prompt (`Sample.group`), optionally divided by their
standard deviation. Nothing here needs torch; it is tested on hand-made trees.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from coopcode.rewards import RewardBreakdown

if TYPE_CHECKING:
    from coopcode.records.cooperation import Cooperation
    from coopcode.schemes.prompts import Prompt


@dataclass
class Sample:
    """One agent completion and what the update needs of it."""

    role: str
    group: int  # siblings share a group: same agent, same prompt; the baseline is their mean
    prompt_ids: list[int] = field(default_factory=list, repr=False)
    completion_ids: list[int] = field(default_factory=list, repr=False)
    text: str = ""
    code: str = ""
    finish_reason: str = ""
    first_prompt: Prompt | None = field(default=None, repr=False)  # the turn-1 prompt of its lineage
    ret: float = 0.0  # return (mean over the joint actions it is in)
    advantage: float = 0.0


@dataclass
class Alone:
    """Counterfactual credit: main's own answer to a joint action's problem, written without
    the helper's code (the single-agent prompt, main's adapter), and what it scored."""

    code: str
    reward: RewardBreakdown
    passed: bool
    tokens: int = 0


@dataclass
class JointAction:
    """One completion per agent, combined into one program and rewarded once."""

    members: dict[str, int]  # role -> index into node.samples[role]
    program: str = ""
    contract: str = ""  # aux's contract the pair worked to (`contract`, `plan`)
    reward: RewardBreakdown | None = None
    passed: bool = False
    feedback: str = ""  # public-example feedback shown to the agents in the child node
    cooperation: Cooperation | None = None  # how the pair cooperated
    # Per-agent credit: role -> that agent's reward (empty: every agent gets the joint reward)
    agent_rewards: dict[str, float] = field(default_factory=dict)
    alone: Alone | None = None  # counterfactual credit: main's own answer without the helper


@dataclass
class Node:
    """A turn's samples for one history, their joint actions, and the revisions they led to."""

    turn: int
    samples: dict[str, list[Sample]] = field(default_factory=dict)
    actions: list[JointAction] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)  # per joint action
    children: dict[int, Node] = field(default_factory=dict)  # joint action index -> child
    returns: list[float] = field(default_factory=list)  # per joint action, after discounting
    agent_returns: dict[str, list[float]] = field(default_factory=dict)  # the same, per agent's credit
    path: tuple[int, ...] = ()  # joint action indices from the root: names the node in seeds

    def walk(self) -> Iterator[Node]:
        """This node and every descendant, parents first."""
        yield self
        for j in sorted(self.children):
            yield from self.children[j].walk()


def aligned_members(roles: Sequence[str], g: int) -> list[dict[str, int]]:
    """Sample j of every agent forms joint action j: G joint actions."""
    return [{r: j for r in roles} for j in range(g)]


def cross_members(roles: Sequence[str], g: int) -> list[dict[str, int]]:
    """Every combination of the agents' samples: G^n joint actions."""
    return [dict(zip(roles, combo)) for combo in itertools.product(range(g), repeat=len(roles))]


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def group_advantages(values: Sequence[float], *, scale_by_std: bool = False,
                     eps: float = 1e-6) -> list[float]:
    """A_i = v_i - mean(v), optionally / std(v) (unbiased, as torch.std and TRL).

    A group whose values are all equal (std below eps) is left unscaled: its advantages are 0.
    """
    m = mean(values)
    adv = [v - m for v in values]
    if scale_by_std and len(values) > 1:
        std = math.sqrt(sum(a * a for a in adv) / (len(values) - 1))
        if std > eps:
            adv = [a / std for a in adv]
    return adv


def discounted_returns(node: Node, gamma: float) -> list[float]:
    """Fill `returns` bottom-up: R_j = r_j + gamma * mean(child returns) where j has a child;
    and `agent_returns[role]` the same from each agent's own reward (its `agent_rewards`
    entry where a joint action has one, else the joint reward)."""
    node.returns = []
    for j, r in enumerate(node.rewards):
        child = node.children.get(j)
        future = mean(discounted_returns(child, gamma)) if child is not None else 0.0
        node.returns.append(r + gamma * future if child is not None else r)
    node.agent_returns = {}
    for role in node.samples:
        values = []
        for j, r in enumerate(node.rewards):
            own = node.actions[j].agent_rewards.get(role, r) if j < len(node.actions) else r
            child = node.children.get(j)
            if child is not None:
                own += gamma * mean(child.agent_returns.get(role, child.returns))
            values.append(own)
        node.agent_returns[role] = values
    return node.returns


def assign_advantages(node: Node, *, scale_by_std: bool = False) -> None:
    """Set every sample's return and advantage in the tree (returns must be computed)."""
    for n in node.walk():
        for role, samples in n.samples.items():
            taken: dict[int, list[float]] = defaultdict(list)
            for action, ret in zip(n.actions, n.agent_returns.get(role, n.returns)):
                if role in action.members:
                    taken[action.members[role]].append(ret)
            for i, s in enumerate(samples):
                s.ret = mean(taken[i])
            groups: dict[int, list[Sample]] = defaultdict(list)
            for s in samples:
                groups[s.group].append(s)
            for siblings in groups.values():
                for s, a in zip(siblings, group_advantages([s.ret for s in siblings],
                                                           scale_by_std=scale_by_std)):
                    s.advantage = a


def reward_levels(nodes: Sequence[Node]) -> dict[str, float]:
    """The mean total reward, its spread, the mean of each of the reward's terms
    (`reward/<term>`) and the pass rate, over the nodes' joint actions; with per-agent credit,
    each agent's mean reward (`credit/<role>`) and how main alone fared (`alone/pass_rate`)."""
    breakdowns = [a.reward for n in nodes for a in n.actions if a.reward is not None]
    if not breakdowns:
        return {}
    totals = [b.total for b in breakdowns]
    m = mean(totals)
    out = {"reward/mean": m, "reward/std": math.sqrt(mean([(t - m) ** 2 for t in totals]))}
    for term in dict.fromkeys(k for b in breakdowns for k in b):  # the reward's order
        out[f"reward/{term}"] = mean([b.get(term, 0.0) for b in breakdowns])
    out["pass_rate"] = mean([1.0 if a.passed else 0.0 for n in nodes for a in n.actions
                             if a.reward is not None])
    credited = [a for n in nodes for a in n.actions if a.agent_rewards]
    for role in dict.fromkeys(r for a in credited for r in a.agent_rewards):
        out[f"credit/{role}"] = mean([a.agent_rewards[role] for a in credited if role in a.agent_rewards])
    alone = [a.alone for n in nodes for a in n.actions if a.alone is not None]
    if alone:
        out["alone/pass_rate"] = mean([1.0 if x.passed else 0.0 for x in alone])
        out["alone/reward"] = mean([x.reward.total for x in alone])
    return out
