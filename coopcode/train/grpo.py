"""GRPO: one agent (the `single` scheme) trained with the group-relative policy gradient.

The seed paper's single-agent baseline: the MAGRPO trainer with one agent, and the GRPO
execution reward (+0.5 runs, +0.1 per passed test, at most 5). The adapter is saved as
`main/`, the adapter the `single` scheme uses in `solve` and `bench`.
"""

from __future__ import annotations

from coopcode.rewards import RewardFn, grpo_reward
from coopcode.train.magrpo import MAGRPOTrainer


class GRPOTrainer(MAGRPOTrainer):
    """Single-agent GRPO."""

    algorithm = "grpo"
    default_reward: RewardFn = staticmethod(grpo_reward)  # type: ignore[assignment]
