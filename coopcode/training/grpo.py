"""GRPO: one agent (the `single` scheme) trained with the group-relative policy gradient.

The seed paper's single-agent baseline: the MAGRPO trainer with one agent, and by default
the GRPO execution reward `seed-grpo` (+0.5 runs, +0.1 per passed test, at most 5). The
adapter is saved as
`main/`, the adapter the `single` scheme uses in `solve` and `bench`.
"""

from __future__ import annotations

from coopcode.training.magrpo import MAGRPOTrainer


class GRPOTrainer(MAGRPOTrainer):
    """Single-agent GRPO."""

    algorithm = "grpo"
