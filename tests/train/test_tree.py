"""The training math on hand-made trees: advantages, discounted returns, joint grouping.

No model, no torch: these are the numbers the policy gradient is weighted with.
"""

from __future__ import annotations

import math

import pytest

from coopcode.rewards import RewardBreakdown
from coopcode.training.tree import (
    JointAction,
    Node,
    Sample,
    aligned_members,
    assign_advantages,
    cross_members,
    discounted_returns,
    group_advantages,
    reward_levels,
)


def _node(rewards: list[float], roles: tuple[str, ...] = ("helper", "main"), *, mode: str = "aligned",
          turn: int = 1) -> Node:
    g = len(rewards) if mode == "aligned" else math.isqrt(len(rewards))
    members = aligned_members(roles, g) if mode == "aligned" else cross_members(roles, g)
    return Node(turn=turn, samples={r: [Sample(r, 0) for _ in range(g)] for r in roles},
                actions=[JointAction(m) for m in members], rewards=list(rewards))


def test_group_advantage_is_return_minus_the_group_mean() -> None:
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([0.2, 0.5, 0.8]) == pytest.approx([-0.3, 0.0, 0.3])
    assert sum(group_advantages([0.1, 0.7, 0.3, 0.9])) == pytest.approx(0.0)


def test_std_scaling_divides_by_the_unbiased_std_and_leaves_flat_groups_at_zero() -> None:
    values = [0.2, 0.5, 0.8]  # deviations -0.3, 0, 0.3: unbiased std = 0.3
    assert group_advantages(values, scale_by_std=True) == pytest.approx([-1.0, 0.0, 1.0])
    # Every joint action got the same reward: nothing to learn, and no division by zero.
    assert group_advantages([0.5, 0.5, 0.5], scale_by_std=True) == [0.0, 0.0, 0.0]


def test_single_turn_returns_are_the_rewards() -> None:
    node = _node([0.2, 0.5, 0.9])
    assert discounted_returns(node, gamma=0.9) == [0.2, 0.5, 0.9]


def test_discounted_returns_on_a_three_turn_tree() -> None:
    # Root: 2 joint actions. Action 0 was revised (child A); action 1 was good enough (no child).
    # Child A: action 0 revised again (grandchild), action 1 not.
    grandchild = _node([1.0, 0.6], turn=3)
    child = _node([0.4, 0.2], turn=2)
    child.children[0] = grandchild
    root = _node([0.3, 0.7])
    root.children[0] = child
    discounted_returns(root, gamma=0.9)
    assert grandchild.returns == [1.0, 0.6]
    # child action 0: 0.4 + 0.9 * mean(1.0, 0.6) = 1.12; action 1 has no child: 0.2
    assert child.returns == pytest.approx([1.12, 0.2])
    # root action 0: 0.3 + 0.9 * mean(1.12, 0.2) = 0.894
    assert root.returns == pytest.approx([0.894, 0.7])
    assert discounted_returns(root, gamma=0.0) == [0.3, 0.7]  # gamma 0: only the turn counts


def test_aligned_grouping_gives_each_completion_its_joint_actions_return() -> None:
    node = _node([1.0, 0.0, 0.5, 0.5])
    discounted_returns(node, 0.9)
    assign_advantages(node)
    for role in ("helper", "main"):
        assert [s.ret for s in node.samples[role]] == [1.0, 0.0, 0.5, 0.5]
        assert [s.advantage for s in node.samples[role]] == [0.5, -0.5, 0.0, 0.0]


def test_cross_grouping_averages_over_the_pairs_a_completion_is_in() -> None:
    assert cross_members(("helper", "main"), 2) == [
        {"helper": 0, "main": 0}, {"helper": 0, "main": 1},
        {"helper": 1, "main": 0}, {"helper": 1, "main": 1}]
    # R[h][m]: helper 0 is good with either main; main 1 is good with either helper.
    node = _node([0.6, 1.0, 0.0, 0.4], mode="cross")
    discounted_returns(node, 0.9)
    assign_advantages(node)
    helper, main = node.samples["helper"], node.samples["main"]
    assert [s.ret for s in helper] == pytest.approx([0.8, 0.2])  # row means
    assert [s.ret for s in main] == pytest.approx([0.3, 0.7])  # column means
    assert [s.advantage for s in helper] == pytest.approx([0.3, -0.3])
    assert [s.advantage for s in main] == pytest.approx([-0.2, 0.2])
    # The same rewards read as aligned would credit the diagonal only.
    aligned = _node([0.6, 0.4])
    discounted_returns(aligned, 0.9)
    assign_advantages(aligned)
    assert [s.advantage for s in aligned.samples["main"]] == pytest.approx([0.1, -0.1])


def test_sequential_cross_baselines_each_main_against_mains_that_saw_the_same_helper() -> None:
    # 2 helpers, each followed by 2 mains (indices 2*i + j), as the sequential rollout builds it.
    node = Node(turn=1, rewards=[0.2, 0.4, 0.9, 0.9])
    node.samples = {"helper": [Sample("helper", 0), Sample("helper", 0)],
                    "main": [Sample("main", i) for i in (0, 0, 1, 1)]}
    node.actions = [JointAction({"helper": i, "main": 2 * i + j}) for i in range(2) for j in range(2)]
    discounted_returns(node, 0.9)
    assign_advantages(node)
    assert [s.advantage for s in node.samples["helper"]] == pytest.approx([-0.3, 0.3])
    # Main group 0 (after helper 0): 0.2 vs 0.4; group 1 (helper 1): both 0.9, nothing to learn.
    assert [s.advantage for s in node.samples["main"]] == pytest.approx([-0.1, 0.1, 0.0, 0.0])


def test_advantages_in_a_tree_are_relative_to_siblings_at_the_same_node() -> None:
    root = _node([0.0, 0.5])
    child = _node([0.2, 0.8], turn=2)
    root.children[1] = child
    discounted_returns(root, 0.5)
    assign_advantages(root)
    # root returns: [0.0, 0.5 + 0.5 * 0.5] = [0, 0.75]
    assert [s.advantage for s in root.samples["main"]] == pytest.approx([-0.375, 0.375])
    assert [s.advantage for s in child.samples["helper"]] == pytest.approx([-0.3, 0.3])


def test_single_agent_tree() -> None:
    node = _node([0.0, 0.6, 0.6, 0.0], roles=("single",))
    discounted_returns(node, 0.9)
    assign_advantages(node, scale_by_std=True)
    adv = [s.advantage for s in node.samples["single"]]
    assert adv[1] == pytest.approx(-adv[0]) and adv[1] > 0


def test_reward_levels_report_each_level_and_the_pass_rate() -> None:
    node = _node([0.0, 0.0])
    node.actions[0].reward = RewardBreakdown(syntax=0.2, runs=0.3, tests=0.5)
    node.actions[0].passed = True
    node.actions[1].reward = RewardBreakdown(syntax=0.2)
    levels = reward_levels([node])
    assert levels["reward/mean"] == pytest.approx(0.6)
    assert levels["reward/std"] == pytest.approx(0.4)
    assert levels["reward/syntax"] == pytest.approx(0.2)
    assert levels["reward/runs"] == pytest.approx(0.15)
    assert levels["reward/tests"] == pytest.approx(0.25)
    assert levels["pass_rate"] == 0.5
