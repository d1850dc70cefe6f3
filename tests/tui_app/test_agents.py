"""Agents screen: load a real (tiny) model and LoRA adapters from checkpoints/ in a worker."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tui_app.conftest import wait_until
from tui.session import AgentsSpec, default_engine_factory


def make_adapter_run(tiny_model_dir: Path, run: Path) -> None:
    """A checkpoint run as training writes it: helper/ and main/ PEFT folders + manifest."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    for role in ("helper", "main"):
        base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
        model = get_peft_model(base, LoraConfig(r=2, lora_alpha=4, target_modules=["q_proj", "v_proj"]))
        model.save_pretrained(str(run / role))
    (run / "manifest.json").write_text(json.dumps(
        {"algorithm": "magrpo", "step": 3, "metrics": {"reward_mean": 0.25}}))


async def test_loads_the_model_then_adapters_on_the_same_base(make_app, tiny_model_dir: Path,
                                                                workdir: Path):
    make_adapter_run(tiny_model_dir, workdir / "checkpoints" / "demo-run")
    app = make_app(spec=AgentsSpec(model=str(tiny_model_dir), sandbox="process"),
                   engine_factory=default_engine_factory, mode="agents", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert app.agents_state == "idle"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.agents_state == "ready", timeout=120, what="model loaded")
        engine = app.session.agents.engine
        assert engine.model_name and "tiny" in app.status_line
        log_lines = [str(line.text) for line in screen.query_one("#load-log").lines]
        assert any("loading" in line for line in log_lines)
        # The run is offered for both agents, with its manifest.
        helper = screen.query_one("#helper-adapter")
        options = [value for _label, value in helper.options]
        assert "checkpoints/demo-run" in options
        helper.value = "checkpoints/demo-run"
        screen.query_one("#main-adapter").value = "checkpoints/demo-run"
        await wait_until(pilot, lambda: "magrpo, step 3, reward 0.250"
                         in str(screen.query_one("#helper-manifest").render()))
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: app.agents_state == "ready"
                         and app.session.agents.helper_adapter is not None, timeout=60)
        agents = app.session.agents
        assert agents.engine is engine  # one base, loaded once, shared
        assert set(engine.adapters()) == {"helper", "main"}
        assert agents.main_adapter[1].endswith("demo-run/main")
        assert "demo-run (helper+main)" in app.status_line  # one run for both, said once


async def test_a_bad_model_is_one_line_and_the_app_lives_on(make_app, workdir: Path):
    app = make_app(spec=AgentsSpec(model=str(workdir / "nowhere"), sandbox="process"),
                   engine_factory=default_engine_factory, mode="agents")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.agents_state == "error", timeout=30)
        assert "unknown model" in app.agents_error or "not a model" in app.agents_error
        assert "error" in str(app.screen.query_one("#agents-state").render())
        await pilot.press("f3")
        await wait_until(pilot, lambda: app.current_mode == "collaborate")
