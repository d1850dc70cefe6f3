"""Each agent's code judged on its own: what the rewards that pay each agent its own share,
and the measure "both needed", are made of.

`coopcode.collaboration.judging` runs the sandbox jobs; this is what they found, kept with a
sample (`"agents": {...}` in a record) so a reward can be computed again from a record.

- `helper_parses` / `main_parses`: each agent's code compiled on its own (`ast`, never run).
  A helper that does not parse breaks the joint program; it is charged to the helper.
- `helper_contract`: the share of aux's own tests (the contract's) the helper's code passes,
  aux standing in for the contract's entry point; None where the contract has no tests.
- `main_with_reference`: the share of the problem's tests main passes with the reference
  aux (the contract's own solution) in place of the helper's: main's work, whatever the
  helper did; None where there is no reference.
- `main_with_stub`: whether main passes every test with the helper's functions replaced by
  stubs that raise: main alone, as far as the helper goes; None where it was not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AgentChecks:
    helper_parses: bool | None = None
    main_parses: bool | None = None
    helper_contract: float | None = None
    main_with_reference: float | None = None
    main_with_stub: bool | None = None

    def to_record(self) -> dict[str, Any]:
        return {"helper_parses": self.helper_parses, "main_parses": self.main_parses,
                "helper_contract": self.helper_contract,
                "main_with_reference": self.main_with_reference,
                "main_with_stub": self.main_with_stub}

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> AgentChecks | None:
        if not isinstance(record, Mapping):
            return None

        def flag(key: str) -> bool | None:
            value = record.get(key)
            return value if isinstance(value, bool) else None

        def share(key: str) -> float | None:
            value = record.get(key)
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        return cls(flag("helper_parses"), flag("main_parses"), share("helper_contract"),
                   share("main_with_reference"), flag("main_with_stub"))


NOT_CHECKED = AgentChecks()
