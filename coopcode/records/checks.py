"""Each agent's code judged on its own: what the rewards that pay each agent its own share,
and the measure "both needed", are made of.

`coopcode.collaboration.judging` runs the sandbox jobs; this is what they found, kept with a
sample (`"agents": {...}` in a record) so a reward can be computed again from a record.

- `helper_parses` / `main_parses`: each agent's code compiled on its own (`ast`, never run).
  A helper that does not parse breaks the joint program; it is charged to the helper.
- `helper_well_formed` / `main_well_formed`: each agent's part is well formed
  (`coopcode.code_analysis.parts`: not cut at the token budget, defines its function, which does
  work, returns something and calls nothing that nobody defines). For a single agent on a
  problem with a contract, the helper's part is its own aux; None elsewhere (no contract)
  and in records judged before parts were (rewards read `*_parses` there).
- `helper_contract`: the share of aux's own tests (the contract's) the helper's code passes,
  aux standing in for the contract's entry point; None where the contract has no tests.
  For a single agent: its own aux's share (lifted out of its entry point where it is nested
  there); None where it wrote no aux.
- `main_with_reference`: the share of the problem's tests main passes with the reference
  aux (the contract's own solution) in place of the helper's: main's work, whatever the
  helper did; None where there is no reference. For a single agent: its code with its own
  aux taken out and the reference's in its place; None where it wrote no aux.
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
    helper_well_formed: bool | None = None
    main_well_formed: bool | None = None

    def to_record(self) -> dict[str, Any]:
        return {"helper_parses": self.helper_parses, "main_parses": self.main_parses,
                "helper_contract": self.helper_contract,
                "main_with_reference": self.main_with_reference,
                "main_with_stub": self.main_with_stub,
                "helper_well_formed": self.helper_well_formed,
                "main_well_formed": self.main_well_formed}

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
                   share("main_with_reference"), flag("main_with_stub"),
                   flag("helper_well_formed"), flag("main_well_formed"))


NOT_CHECKED = AgentChecks()
