"""The `Problem`: one programming task with hidden tests and public examples."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coopcode.problems.contract import Contract


@dataclass(frozen=True)
class Problem:
    """A HumanEval-style task.

    `prompt` is what the agents see (imports, signature, docstring). `tests` is hidden test
    source (`def check(candidate): ...`), used for rewards and pass@k. `examples` are public
    assert statements taken from the docstring; they are the only tests agents get feedback
    on between turns. `contract`, where the problem has one, fixes the helper's part (aux's
    signature, docstring and tests); `sources` names the problems it was built from (a
    composed problem: its inner step's task id, then its outer step's).
    """

    task_id: str
    prompt: str
    entry_point: str
    tests: str
    examples: tuple[str, ...] = ()
    canonical_solution: str | None = None
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    contract: Contract | None = None
    sources: tuple[str, ...] = ()

    @property
    def public_tests(self) -> str:
        """The public examples as test source in the same shape as the hidden tests."""
        if not self.examples:
            return ""
        body = "\n".join(f"    {line}" for line in self.examples)
        return f"def check(candidate):\n{body}\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "prompt": self.prompt,
            "entry_point": self.entry_point,
            "test": self.tests,
            "examples": list(self.examples),
            "canonical_solution": self.canonical_solution,
            "source": self.source,
            "sources": list(self.sources),
            "contract": None if self.contract is None else self.contract.to_dict(),
        }
