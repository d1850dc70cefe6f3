"""`make demo` shows the trained contract pair on a compose test problem it solves with both
agents needed: the pair and the problem the Makefile names are there, and the pair's committed
bench passes that problem, both needed, in most of its samples (so the demo is no lucky draw)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from coopcode.problems import load_compose

REPO = Path(__file__).resolve().parent.parent


def _make_variable(name: str) -> str:
    found = re.search(rf"^{name}\s*:=\s*(\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert found is not None, f"the Makefile sets no {name}"
    return found.group(1)


def test_the_demo_pair_solves_its_problem_with_both_agents_in_its_committed_bench() -> None:
    pair, problem = _make_variable("DEMO_PAIR"), _make_variable("DEMO_PROBLEM")
    for role in ("helper", "main"):
        assert (REPO / pair / role / "adapter_config.json").is_file(), role
    assert problem in {p.task_id for p in load_compose("test")}  # never trained on
    with gzip.open(REPO / "docs" / "divided" / "final" / "magrpo" / "samples.jsonl.gz", "rt") as f:
        samples = [s for s in map(json.loads, f) if s["task_id"] == problem]
    assert {s["helper_adapter"] for s in samples} == {f"{pair}/helper"}  # the bench of this pair
    both = [s for s in samples if s["passed"] and s["cooperation"]["both_needed"]]
    assert len(samples) == 10 and len(both) >= 8, (len(samples), len(both))
