"""Training data: the problems, and which of them each step trains on.

The order is a pure function of (seed, step): epoch e is a permutation of the problems seeded
with (seed, e), and step s takes positions [s*P, (s+1)*P) of the concatenated epochs. A run
that is killed and resumed at step s therefore trains on exactly the problems an
uninterrupted run would have, with nothing repeated or skipped, and no sampler state to save.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from coopcode.core.errors import UserError
from coopcode.problems import Problem, load_problems


def load_training_problems(spec: str, limit: int | None = None) -> list[Problem]:
    """The problems to train on, or a UserError when there are none."""
    problems = load_problems(spec)
    if limit is not None:
        problems = problems[:limit]
    if not problems:
        raise UserError(f"{spec}: no problems to train on")
    return problems


@dataclass(frozen=True)
class ProblemOrder:
    """Which problems (indices) step s trains on."""

    n_problems: int
    per_step: int = 1
    seed: int = 0

    def epoch_permutation(self, epoch: int) -> list[int]:
        order = list(range(self.n_problems))
        # Integer seed: random.Random(int) is stable across Python versions and platforms.
        random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
        return order

    def indices(self, step: int) -> list[int]:
        """Problem indices for 0-based `step`."""
        out = []
        for pos in range(step * self.per_step, (step + 1) * self.per_step):
            epoch, within = divmod(pos, self.n_problems)
            out.append(self.epoch_permutation(epoch)[within])
        return out

    def epoch(self, step: int) -> float:
        """Fractional epoch reached after 0-based `step`."""
        return (step + 1) * self.per_step / self.n_problems
