"""`coopcode solve`'s last line says "both needed" when a passing pair needed both agents (what
`make demo` shows), "not both needed" when it passed without one, and nothing on a failure."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console

from coopcode.display.render import print_solve


def _result(both_needed: bool | None, passed: bool) -> dict[str, Any]:
    status = "passed" if passed else "failed"
    return {
        "scheme": "contract", "helper_code": "def aux(l):\n    return [x + 1 for x in l]\n",
        "main_code": "def f(l):\n    return sorted(aux(l))[len(l) // 2]\n",
        "program": "def aux(l): ...\n",
        "verdict": {"status": status, "n_passed": 4 if passed else 0, "n_tests": 4,
                    "tests": [{"index": 0, "source": "assert candidate([1]) == 2",
                               "status": status, "message": ""}]},
        "reward": {"total": 2.2}, "reward_name": "own", "best_sample": 0, "attempts": [{}],
        "seconds": 1.0,
        "cooperation": {"patterns": ["decorator"], "own_work": True, "helper_solves": False,
                        "both_needed": both_needed},
    }


@pytest.mark.parametrize(("both_needed", "passed", "shown"), [
    (True, True, "both needed"), (False, True, "not both needed"), (None, False, None)])
def test_the_cooperation_line_says_whether_both_were_needed(
        both_needed: bool | None, passed: bool, shown: str | None) -> None:
    console = Console(record=True, force_terminal=True, width=200)
    print_solve(console, _result(both_needed, passed))
    last = console.export_text().rstrip().splitlines()[-1]
    assert last.startswith("cooperation main does work of its own")
    if shown is None:
        assert "both needed" not in last
    else:
        assert f"  {shown}  patterns decorator" in last
