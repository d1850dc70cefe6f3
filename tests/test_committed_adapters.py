"""The adapter runs committed in checkpoints/ load where users load them: `coopcode solve` on the
embedded 0.5B model (the TUI's Agents screen: tests/tui/test_agents_committed.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, coopcode

pytestmark = [pytest.mark.slow, pytest.mark.model]


def committed_runs() -> list[str]:
    """Runs whose manifest is in git (a run still training in a working copy is not one)."""
    done = subprocess.run(["git", "ls-files", "checkpoints/*/manifest.json"], cwd=REPO,
                          capture_output=True, text=True)
    return sorted(Path(line).parent.name for line in done.stdout.split())


def _roles(run: str) -> tuple[str, ...]:
    manifest = json.loads((REPO / "checkpoints" / run / "manifest.json").read_text())
    return tuple(manifest["adapters"])


def test_the_committed_runs_are_the_documented_ones() -> None:
    runs = committed_runs()
    assert "magrpo-0.5b-demo" in runs
    readme = (REPO / "checkpoints" / "README.md").read_text()
    for run in runs:
        assert f"`{run}/`" in readme, f"checkpoints/README.md does not describe {run}"


@pytest.mark.parametrize("run", committed_runs())
def test_solve_loads_the_committed_adapters(run: str, cli_env: dict[str, str]) -> None:
    roles = _roles(run)
    folder = f"checkpoints/{run}"
    if roles == ("main",):  # GRPO: one agent
        args = ["--scheme", "single", "--main-adapter", folder]
    else:
        args = ["--helper-adapter", folder, "--main-adapter", folder]
    done = coopcode("solve", "examples/below_zero.py", *args, "--max-new-tokens", "8", "--json",
                    env=cli_env, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: the program failed a test
    data = json.loads(done.stdout)
    assert {role: Path(path).parts[-2:] for role, path in data["adapter_folders"].items()} == {
        role: (run, role) for role in roles}
