"""End to end with the embedded real model: `coopcode solve` solves an easy HumanEval problem."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.model
@pytest.mark.slow
def test_embedded_model_solves_an_easy_humaneval_problem() -> None:
    """HumanEval/23 (strlen), greedy, the default sequential scheme and sandbox: helper and
    main both write code, the program passes every hidden test, and the exit code is 0."""
    done = subprocess.run(
        [sys.executable, "-m", "coopcode", "solve", "HumanEval/23", "--json", "--max-new-tokens", "160"],
        capture_output=True, text=True, timeout=1200, cwd=REPO,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    data = json.loads(done.stdout)
    assert data["passed"] is True
    assert data["verdict"]["status"] == "passed"
    assert data["verdict"]["n_passed"] == data["verdict"]["n_tests"] >= 3
    assert "def strlen" in data["main_code"]
    assert data["helper_code"].startswith("def aux(")
    assert data["reward"]["total"] == pytest.approx(0.5 + 0.1 * data["verdict"]["n_tests"])
    assert data["meta"]["model"] == "qwen2.5-coder-0.5b-instruct"
