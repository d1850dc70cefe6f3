"""The adapter runs committed in checkpoints/ load in the TUI's Agents screen, on the embedded
0.5B model, one base shared by every run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli_helpers import REPO
from tests.test_committed_adapters import _roles, committed_runs
from tests.tui_app.conftest import wait_until
from tui.session import AgentsSpec, default_engine_factory

pytestmark = [pytest.mark.slow, pytest.mark.model]


async def test_the_agents_screen_loads_every_committed_run(make_app, workdir: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COOPCODE_CACHE")  # the embedded model in the user's cache
    for run in committed_runs():
        shutil.copytree(REPO / "checkpoints" / run, workdir / "checkpoints" / run,
                        ignore=shutil.ignore_patterns("trainer_state", ".lock"))
    app = make_app(spec=AgentsSpec(sandbox="process"), engine_factory=default_engine_factory,
                   mode="agents", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.agents_state == "ready", timeout=300,
                         what="the embedded model loaded")
        engine = app.session.agents.engine
        for run in committed_runs():
            roles = _roles(run)
            value = f"checkpoints/{run}"
            for role in ("helper", "main"):
                select = screen.query_one(f"#{role}-adapter")
                offered = [v for _label, v in select.options]
                assert (value in offered) == (role in roles), (run, role, offered)
                select.value = value if role in roles else "none"
            await pilot.press("ctrl+r")
            def loaded(run: str = run, roles: tuple[str, ...] = roles) -> bool:
                agents = app.session.agents
                return (app.agents_state == "ready" and agents.main_adapter is not None
                        and agents.main_adapter[1].endswith(f"{run}/main")
                        and (agents.helper_adapter is not None) == ("helper" in roles))

            await wait_until(pilot, loaded, timeout=300, what=f"{run}'s adapters loaded")
            agents = app.session.agents
            assert agents.engine is engine  # one base for every run
            assert agents.main_adapter[1].endswith(f"{run}/main")
