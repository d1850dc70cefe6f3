"""How a pair cooperated, as a sample keeps it: `Cooperation` (the headline measures and what
the patterns say) and `HelperUse` (how main's code uses the helper's functions).

`coopcode.code_analysis.cooperation` reads them from the agents' code; every view, reward
and record reads them from here, so a figure means the same thing wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class HelperUse:
    """How main's code uses the helper's functions (`coopcode.code_analysis.usage` defines
    the words)."""

    parsed: bool = False  # both agents' code parses
    helper_functions: tuple[str, ...] = ()  # top-level functions of the helper's code
    trivial: tuple[str, ...] = ()  # helper functions that do nothing
    redefined: tuple[str, ...] = ()  # helper functions main defines again
    helper_returns: bool = False  # a live helper function returns a value
    entry_returns: bool = False  # main defines the entry point, and it returns a value
    used: int = 0  # call sites (and hand-overs) whose value main uses
    discarded: int = 0  # call sites whose value main throws away
    main_without_discarded: str = ""  # main's code with bare helper-call statements removed

    @property
    def live(self) -> tuple[str, ...]:
        """The helper functions main could use: not trivial, not redefined."""
        return tuple(n for n in self.helper_functions
                     if n not in self.trivial and n not in self.redefined)

    @property
    def uses_helper(self) -> bool:
        return self.used > 0


@dataclass(frozen=True)
class Cooperation:
    """How main used the helper's code in one sample (`coopcode.code_analysis.cooperation`
    says what each measure means)."""

    helper_functions: tuple[str, ...] = ()
    called: dict[str, int] = field(default_factory=dict)  # helper name -> call sites in main
    in_loop: bool = False  # a call sits inside a loop or comprehension
    redefined: tuple[str, ...] = ()  # helpers main wrote again itself (shadowing the helper's)
    parse_error: str = ""
    patterns: tuple[str, ...] = ()  # classify_cooperation's names
    own_work: bool = False
    helper_solves: bool | None = None  # None: the helper was not run alone
    use: HelperUse = field(default_factory=HelperUse)
    both_needed: bool | None = None  # None: the pair failed, or it was not measured

    @property
    def calls_helper(self) -> bool:
        return bool(self.called) and not self.redefined

    @property
    def uses_helper(self) -> bool:
        """Main uses a live helper function's value (not a discarded or a trivial one)."""
        return self.use.uses_helper

    @property
    def shell(self) -> bool:
        """Main uses the helper but does no work of its own with it (a wrapper or a
        one-expression shell)."""
        return self.uses_helper and not self.own_work

    @property
    def summary(self) -> str:
        """One line: does main call the helper, how, and who did the work."""
        if self.parse_error:
            return f"unknown ({self.parse_error})"
        if not self.helper_functions:
            return "no helper code: main works alone"
        if self.redefined:
            return f"main redefines {', '.join(self.redefined)}: the helper's code is unused"
        if not self.called:
            names = ", ".join(self.helper_functions)
            return f"main ignores the helper ({names} never called)"
        sites = sum(self.called.values())
        names = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in self.called.items())
        where = "inside a loop" if self.in_loop else ("once" if sites == 1 else f"at {sites} sites")
        work = "own work" if self.own_work else "no own work"
        alone = {True: "; the helper alone solves it", False: "; the helper alone does not solve it",
                 None: ""}[self.helper_solves]
        needed = {True: "; both needed (neither alone passes)",
                  False: "; not both needed (one of them alone passes)", None: ""}[self.both_needed]
        return f"main calls {names} {where} ({work}){alone}{needed}"

    def to_record(self) -> dict[str, Any]:
        """What a sample's record keeps."""
        return {"patterns": list(self.patterns), "own_work": self.own_work,
                "helper_solves": self.helper_solves, "both_needed": self.both_needed}


NO_HELPER = Cooperation()
