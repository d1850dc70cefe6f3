"""The TUI's scheme lists show a scheme a user's plugin registered (tests/plugins/my_extensions.py,
named in COOPCODE_PLUGINS as a user would)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PLUGIN = Path(__file__).resolve().parent.parent / "plugins" / "my_extensions.py"


@pytest.fixture
def registered_plugin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The plugin loaded into this process, and every registry restored afterwards."""
    from coopcode import plugins
    from coopcode.engines.registry import ENGINE_KINDS
    from coopcode.rewards.base import REWARDS
    from coopcode.schemes import SCHEME_TYPES

    saved: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (d, dict(d)) for d in (ENGINE_KINDS, REWARDS, SCHEME_TYPES)]  # type: ignore[misc]
    monkeypatch.setenv("COOPCODE_PLUGINS", str(PLUGIN))
    monkeypatch.setattr(plugins, "_loaded", set())
    plugins.load_plugins()
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)


async def test_the_tuis_scheme_lists_show_a_plugin_scheme(registered_plugin: None, make_app: Any,
                                                          tiny_model_dir: Path) -> None:
    from tui.session import AgentsSpec

    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"), mode="bench",
                   autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        schemes = app.screen.query_one("#schemes")
        listed = [schemes.get_option_at_index(i).value for i in range(schemes.option_count)]
        assert "blind" in listed and listed[0] == "single"
        app.switch_mode("collaborate")
        await pilot.pause()
        choices = app.screen.query_one("#scheme")
        assert ("blind", "blind") in list(choices.options)


async def test_the_tui_loads_a_plugin_engine_with_its_options_and_benches_with_it(
        registered_plugin: None, make_app: Any, tiny_model_dir: Path) -> None:
    from coopcode import EngineConfig
    from tui.cli import engine_args_of
    from tui.session import AgentsSpec, engine_factory_for

    config = EngineConfig(engine="canned", engine_option=("op=-",))
    config.validate()
    engine = engine_factory_for(config.engine, config.kwargs())(None, lambda _m: None)
    assert type(engine).__name__ == "Canned" and engine.op == "-"
    spec = AgentsSpec(model=str(tiny_model_dir), sandbox="process", engine_args=engine_args_of(config))
    app = make_app(spec=spec, mode="bench", autoload=False)
    async with app.run_test(size=(100, 30)):
        argv, _ks, _n = app.screen.build_argv()
        at = argv.index("--engine")
        assert argv[at:at + 4] == ["--engine", "canned", "--engine-option", "op=-"]
