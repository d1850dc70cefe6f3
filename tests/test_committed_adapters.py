"""The adapter runs committed in checkpoints/ load where users load them, onto the embedded
0.5B model: every run in one process, the base loaded once and each run's adapters put on it
in turn (as the TUI's Agents screen does when only the adapters change:
tests/tui_app/test_agents_committed.py), and `coopcode solve` from the command line with a pair
and with a GRPO run."""

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


def _adapter_args(run: str) -> list[str]:
    folder = f"checkpoints/{run}"
    if _roles(run) == ("main",):  # GRPO: one agent
        return ["--scheme", "single", "--main-adapter", folder]
    return ["--helper-adapter", folder, "--main-adapter", folder]


@pytest.mark.parametrize("run", ["magrpo-0.5b-demo", "grpo-0.5b"])
def test_solve_loads_committed_adapters_from_the_command_line(run: str, cli_env: dict[str, str]) -> None:
    done = coopcode("solve", "examples/below_zero.py", *_adapter_args(run), "--max-new-tokens", "8",
                    "--json", env=cli_env, timeout=600)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: the program failed a test
    data = json.loads(done.stdout)
    assert {role: Path(path).parts[-2:] for role, path in data["adapter_folders"].items()} == {
        role: (run, role) for role in _roles(run)}


# The runs solved whole in the loop below; every other run generates from a short prompt
# with each of its adapters (a whole solve's prompts cost ~20 s a run on an AVX2-only CPU,
# and each final of the fair round adds a run).
SOLVED_WHOLE = ("magrpo-0.5b-demo", "grpo-0.5b")


def test_every_committed_run_loads_onto_one_base_and_solves(process_sandbox: object) -> None:
    from coopcode import SolveConfig, attach_adapters, load_engine, load_problems, solve
    from coopcode.engines.base import GenerationRequest, SamplingParams

    problem = load_problems(str(REPO / "examples" / "below_zero.py"))[0]
    engine = load_engine()  # the embedded model, loaded once for every run
    runs = committed_runs()
    assert set(SOLVED_WHOLE) <= set(runs)
    try:
        for run in runs:
            roles = _roles(run)
            folder = str(REPO / "checkpoints" / run)
            agents = attach_adapters(engine, folder if "helper" in roles else None, folder)
            loaded = {"helper": agents.helper_adapter, "main": agents.main_adapter}
            assert {role: Path(loaded[role][1]).parts[-2:] for role in roles} == {
                role: (run, role) for role in roles}, run
            if run not in SOLVED_WHOLE:
                names = [agents.helper_name if role == "helper" else agents.main_name for role in roles]
                assert all(names), run
                params = SamplingParams(max_new_tokens=4, temperature=0.0)
                out = engine.generate([GenerationRequest("def below_zero(ops):", params, adapter=name)
                                       for name in names])
                assert [len(c) for c in out] == [1] * len(names), run
                assert all(c[0].n_tokens > 0 for c in out), run
                continue
            config = SolveConfig(scheme="single" if roles == ("main",) else "sequential",
                                 max_new_tokens=8)
            result = solve(problem, engine, process_sandbox, config,  # type: ignore[arg-type]
                           helper_adapter=agents.helper_name, main_adapter=agents.main_name)
            outputs = result.best.outputs
            assert {o.role for o in outputs} == ({"single"} if roles == ("main",) else {"helper", "main"})
            assert all(o.n_tokens > 0 for o in outputs), run
            # each agent generated with its own adapter (GRPO's single agent with main's)
            assert {o.adapter for o in outputs} == {agents.helper_name if o.role == "helper"
                                                    else agents.main_name for o in outputs}, run
    finally:
        engine.close()
