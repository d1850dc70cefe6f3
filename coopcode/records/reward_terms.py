"""A reward's score of one sample: its named terms and their total.

Below both the schemes (an attempt records its reward) and the rewards (which compute it),
so neither imports the other for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


class RewardBreakdown(Mapping[str, float]):
    """A reward's named terms (in the reward's order) and their total.

    `RewardBreakdown(syntax=0.2, runs=0.3)`; read a term as `b["syntax"]` (a term a reward
    does not have reads as absent: `b.get("runs", 0.0)`).
    """

    __slots__ = ("_terms",)

    def __init__(self, terms: Mapping[str, float] | None = None, /, **more: float) -> None:
        self._terms: dict[str, float] = {k: float(v) for k, v in {**(terms or {}), **more}.items()}
        if "total" in self._terms:
            raise ValueError("'total' is not a term: it is the sum of the terms")

    def __getitem__(self, key: str) -> float:
        return self._terms[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._terms)

    def __len__(self) -> int:
        return len(self._terms)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RewardBreakdown) and self._terms == other._terms

    def __hash__(self) -> int:
        return hash(tuple(self._terms.items()))

    def __repr__(self) -> str:
        terms = ", ".join(f"{k}={v:g}" for k, v in self._terms.items())
        return f"RewardBreakdown({terms}; total={self.total:g})"

    @property
    def terms(self) -> dict[str, float]:
        return dict(self._terms)

    @property
    def total(self) -> float:
        return round(sum(self._terms.values()), 6)

    def to_dict(self) -> dict[str, float]:
        """The terms and `total`: what results files record."""
        return {**self._terms, "total": self.total}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RewardBreakdown:
        """A breakdown from a recorded dict (its `total` is recomputed, not trusted)."""
        return cls({k: float(v) for k, v in data.items()
                    if k != "total" and isinstance(v, int | float)})
