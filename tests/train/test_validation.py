"""Validation while training (`coopcode train --eval-every N`): real short runs of the tiny
model through the CLI, scored in Docker; the step-0 evaluation, the bench folders, resuming
without repeating an evaluation, GRPO's single scheme, refused values, the curves."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from coopcode.core import events as ev
from coopcode.problems import load_problems
from coopcode.training import TrainConfig
from tests.cli_helpers import assert_one_line_error, coopcode

REPO = Path(__file__).resolve().parent.parent.parent
# 3 validation problems x 2 samples and 4-token completions: an evaluation takes a second or
# two with the tiny model, so a run can evaluate at every step it is asked to.
SMALL = ("--group-size", "2", "--max-new-tokens", "4", "--limit", "3", "--eval-limit", "3",
         "--eval-n", "2", "--sandbox", "docker")
VAL_3 = [p.task_id for p in load_problems("humaneval:val")[:3]]


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stdout.splitlines() if x.strip()]


def _val_logs(events: list[dict[str, Any]]) -> list[str]:
    return [e["message"] for e in events if e["type"] == "log"
            and e["message"].startswith("validation at step") and "pass@1" in e["message"]]


def _samples(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def validated_run(tiny_model_dir: Path,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Any], list[Any]]]:
    """3 MAGRPO steps evaluated every 2 (so at 0, 2 and the last, 3), then resumed to step 4
    with --eval-every 3 (a validation setting may change on --resume). It trains on the
    validation problems themselves: the run must say so."""
    out = tmp_path_factory.mktemp("runs") / "validated"
    first = coopcode("train", "--model", str(tiny_model_dir), "--algo", "magrpo", "--steps", "3",
                     "--eval-every", "2", "--save-every", "2", "--problems", "humaneval:val",
                     "--top-p", "0.6",  # trains with it; evaluates as the bench does (0.95)
                     *SMALL, "--out", str(out), "--events", "jsonl", timeout=600)
    assert first.returncode == 0, first.stderr
    second = coopcode("train", "--resume", "--out", str(out), "--steps", "4", "--eval-every", "3",
                      "--sandbox", "docker", "--events", "jsonl", timeout=600)
    assert second.returncode == 0, second.stderr
    yield out, _events(first.stdout), _events(second.stdout)


def test_the_run_evaluates_at_step_0_every_n_steps_and_at_the_end(
        validated_run: tuple[Path, list[Any], list[Any]]) -> None:
    run, first, _ = validated_run
    records = _records(run)
    # Step 0 is a record of its own, before any update; steps 2 and 3 carry their figures.
    assert records[0]["step"] == 0 and set(records[0]) >= {"val/pass@1", "val/acc@1"}
    assert "reward/mean" not in records[0]
    evaluated = [r["step"] for r in records if "val/pass@1" in r]
    assert evaluated == [0, 2, 3, 4]
    assert [r["step"] for r in records] == [0, 1, 2, 3, 4]
    for r in records:
        if "val/pass@1" in r:
            assert 0.0 <= r["val/pass@1"] <= 1.0 and 0.0 <= r["val/acc@1"] <= 1.0
            assert r["val/seconds"] > 0
    # What the run said while evaluating, and that its val/ figures are not held out.
    assert [m.split(":")[0] for m in _val_logs(first)] == [
        "validation at step 0", "validation at step 2", "validation at step 3"]
    warned = [e["message"] for e in first if e["type"] == "log" and e.get("level") == "warning"]
    assert any("3 of the 3 validation problems are also trained on" in w
               and "humaneval:fit" in w for w in warned), warned
    # The Metric events carry the figures too (what the TUI plots).
    metric_steps = [e["step"] for e in first if e["type"] == "metric" and "val/pass@1" in e["values"]]
    assert metric_steps == [0, 2, 3]


def test_each_evaluation_is_a_bench_folder_of_the_runs_scheme_seed_and_budget(
        validated_run: tuple[Path, list[Any], list[Any]]) -> None:
    run, _, _ = validated_run
    folders = sorted(p.name for p in (run / "validation").iterdir())
    assert folders == ["step-000000", "step-000002", "step-000003", "step-000004"]
    records = {r["step"]: r for r in _records(run)}
    for name in folders:
        folder = run / "validation" / name
        samples = _samples(folder)
        assert sorted((s["task_id"], s["sample"]) for s in samples) == sorted(
            (t, i) for t in VAL_3 for i in range(2))
        assert {s["scheme"] for s in samples} == {"sequential"}
        step = int(name.split("-")[1])
        assert {s["main_adapter"] for s in samples} == {f"{run / 'main'}@step-{step}"}
        assert {s["helper_adapter"] for s in samples} == {f"{run / 'helper'}@step-{step}"}
        summary = json.loads((folder / "summary.json").read_text())
        (row,) = summary["rows"]
        assert summary["meta"]["complete"] and summary["meta"]["temperature"] == 0.8
        # The figures in metrics.jsonl are the bench's, recomputable from the folder, each
        # with its standard error over the problems.
        assert records[step]["val/pass@1"] == row["pass@1"]
        assert records[step]["val/pass@1_se"] == row["pass@1_se"]
        assert records[step]["val/own_work_se"] == row["own_work_rate_se"]
        assert set(row["cooperation_per_problem"][VAL_3[0]]) >= {"own_work", "helper_solves"}
        assert records[step]["val/pass@1"] == sum(s["passed"] for s in samples) / len(samples)
        meta = json.loads((folder / "meta.json").read_text())
        assert meta["config"]["seed"] == 0 and meta["config"]["max_new_tokens"] == 4
        # every recipe is evaluated alike: the bench's top-p, not the run's
        assert meta["config"]["top_p"] == 0.95 and meta["config"]["n"] == 2


def test_a_resumed_run_does_not_evaluate_step_0_again(
        validated_run: tuple[Path, list[Any], list[Any]]) -> None:
    run, _, resumed = validated_run
    assert sum(r["step"] == 0 for r in _records(run)) == 1
    # --keep-step best (the default): each evaluation keeps what it measured, to publish
    assert sorted(p.parent.name for p in run.glob("validation/*/adapters")) == \
        [f"step-{s:06d}" for s in (0, 2, 3, 4)]
    # --eval-every 3 from step 3: only the new last step (4) is evaluated.
    assert [m.split(":")[0] for m in _val_logs(resumed)] == ["validation at step 4"]
    assert [e["step"] for e in resumed if e["type"] == "metric"] == [4]


def test_checkpoints_show_plots_a_validated_run(
        validated_run: tuple[Path, list[Any], list[Any]]) -> None:
    run, _, _ = validated_run
    shown = coopcode("checkpoints", "show", str(run), "--plot", "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    # The step-0 record holds no training figures: the curve starts at step 1.
    assert detail["curve"][0]["steps"].startswith("1-")
    with Image.open(detail["curves_png"]) as img:
        assert img.format == "PNG"
    # Every evaluation with its standard errors, and which step the two-SE rule prefers.
    evals = detail["validation"]["evaluations"]
    assert [e["step"] for e in evals] == [0, 2, 3, 4]
    assert all("val/pass@1_se" in e and "val/own_work_se" in e for e in evals)
    choice = detail["validation"]["choice"]
    assert choice["margin_se"] == 2.0 and choice["best"].startswith("step ")
    assert (choice["preferred"] is None) == bool(choice["tied"])
    text = coopcode("checkpoints", "show", str(run))
    assert text.returncode == 0, text.stderr
    assert "validation (± standard error over problems)" in text.stdout
    assert "is preferred" in text.stdout or "no step is preferred" in text.stdout


def test_a_run_killed_during_an_evaluation_redoes_that_step(tiny_model_dir: Path,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "killed"
    argv = [sys.executable, "-m", "coopcode", "train", "--model", str(tiny_model_dir),
            "--steps", "3", "--eval-every", "1", "--save-every", "1", *SMALL, "--out", str(out),
            "--events", "jsonl"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # killed as step 2's evaluation starts: step 1 is saved
            event = json.loads(line)
            if event["type"] == "log" and event["message"].startswith("validation at step 2:"):
                break
    finally:
        proc.kill()
        proc.wait()
    assert [r["step"] for r in _records(out)] == [0, 1]
    resumed = coopcode("train", "--resume", "--out", str(out), "--sandbox", "docker",
                       "--events", "jsonl", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    records = _records(out)
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    assert all("val/pass@1" in r for r in records)
    assert [m.split(":")[0] for m in _val_logs(_events(resumed.stdout))] == [
        "validation at step 2", "validation at step 3"]
    for step in range(4):  # step 2's evaluation is whole: redone, not resumed from the kill
        assert len(_samples(out / "validation" / f"step-{step:06d}")) == 6


def test_grpo_evaluates_its_one_agent_with_the_single_scheme(tiny_model_dir: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "grpo"
    done = coopcode("train", "--model", str(tiny_model_dir), "--algo", "grpo", "--steps", "1",
                    "--eval-every", "1", "--problems", "humaneval:fit", *SMALL, "--out", str(out),
                    "--keep-eval-adapters", "--events", "jsonl", timeout=600)
    assert done.returncode == 0, done.stderr
    events = _events(done.stdout)
    # Training on fit holds val out: no overlap warning.
    assert not any("also trained on" in e.get("message", "") for e in events)
    records = _records(out)
    assert [r["step"] for r in records if "val/pass@1" in r] == [0, 1]
    for r in records:  # no helper: no helper figures
        assert "val/helper_solves" not in r and "val/own_work" not in r
    for step in (0, 1):
        samples = _samples(out / "validation" / f"step-{step:06d}")
        assert {s["scheme"] for s in samples} == {"single"} and len(samples) == 6
        assert {s["main_adapter"] for s in samples} == {f"{out / 'main'}@step-{step}"}
        assert {s["helper_adapter"] for s in samples} == {None}
    # --keep-eval-adapters: each evaluation keeps what it measured; the last step's are the
    # run's last/, and the run's own are the kept step's (0: the tiny model passes nothing,
    # so no later step leads it).
    kept = {step: out / "validation" / f"step-{step:06d}" / "adapters" / "main" for step in (0, 1)}
    assert [sorted(p.name for p in kept[s].iterdir()) for s in (0, 1)] == \
        [["adapter_config.json", "adapter_model.safetensors"]] * 2
    assert _same_weights(kept[1], out / "last" / "main")
    assert _same_weights(kept[0], out / "main")


def _same_weights(a: Path, b: Path) -> bool:
    from safetensors.torch import load_file

    x, y = (load_file(str(p / "adapter_model.safetensors")) for p in (a, b))
    return x.keys() == y.keys() and all(x[k].equal(y[k]) for k in x)


def test_validation_does_not_change_what_is_trained(tiny_model_dir: Path, auto_sandbox: Any,
                                                    tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.training import output_scorer, train

    def odd_length(problem: Any, action: Any, node: Any) -> float:  # a reward with a spread
        return float(len(node.samples["main"][action.members["main"]].text) % 2)

    def run(out: Path, **validation: Any) -> dict[str, Any]:
        # Alone per sample: the two runs' rollouts must not differ by batch rounding.
        engine = TransformersEngine(str(tiny_model_dir), dtype="float32", deterministic=True)
        try:
            # temperature 2: a flat draw, so two siblings differ and the steps have a gradient
            train(TrainConfig(steps=2, group_size=2, max_new_tokens=8, limit=2, temperature=2.0,
                              **validation),
                  out, engine=engine, sandbox=auto_sandbox, scorer=output_scorer(odd_length))
        finally:
            engine.close()
        last = out / "last" if validation else out  # validated: the top level is the kept step
        return {role: load_file(str(last / role / "adapter_model.safetensors"))
                for role in ("helper", "main")}

    plain = run(tmp_path / "plain")
    validated = run(tmp_path / "validated", eval_every=1, eval_limit=2)
    assert [r["step"] for r in _records(tmp_path / "validated") if "val/pass@1" in r] == [0, 1, 2]
    assert any(r.get("grad_norm", 0) > 0 for r in _records(tmp_path / "plain"))  # it learned
    for role, weights in plain.items():
        assert weights.keys() == validated[role].keys()
        assert all(weights[k].equal(validated[role][k]) for k in weights), role
    assert ((tmp_path / "plain" / "samples.jsonl").read_text()
            == (tmp_path / "validated" / "samples.jsonl").read_text())


@pytest.mark.parametrize(("args", "message"), [
    (["--eval-every", "0"], "--eval-every must be at least 1 (got 0)"),
    (["--eval-every", "-2"], "--eval-every must be at least 1 (got -2)"),
    (["--eval-every", "2", "--eval-n", "0"], "--eval-n must be at least 1 (got 0)"),
    (["--eval-every", "2", "--eval-limit", "0"], "--eval-limit must be at least 1 (got 0)"),
])
def test_out_of_range_validation_settings_are_refused_in_one_line(args: list[str], message: str,
                                                                  tmp_path: Path) -> None:
    assert_one_line_error(coopcode("train", "--out", str(tmp_path / "run"), *args), message)
    assert not (tmp_path / "run").exists()


def test_unknown_validation_problems_are_refused_before_the_model_loads(tmp_path: Path) -> None:
    done = coopcode("train", "--out", str(tmp_path / "run"), "--eval-every", "2",
                    "--eval-problems", str(tmp_path / "nothing.jsonl"), "--sandbox", "process")
    assert_one_line_error(done, "nothing.jsonl: no such file")
    assert "loading" not in done.stderr


def test_runs_saved_before_validation_load_with_it_off() -> None:
    saved = {path: json.loads(path.read_text())
             for path in sorted((REPO / "checkpoints").glob("*/config.json"))}
    before = [path for path, fields in saved.items() if "eval_every" not in fields]
    assert before, "the committed runs saved before validation existed"
    for path in before:
        assert TrainConfig.from_dict(saved[path]).eval_every is None, path
    for path, fields in saved.items():
        assert TrainConfig.from_dict(fields).eval_every == fields.get("eval_every"), path
    assert TrainConfig().validation_problems == "humaneval:val" and TrainConfig().eval_n == 2


@pytest.mark.parametrize(("problems", "given", "validated_on"), [
    ("humaneval:train", None, "humaneval:val"),
    ("compose:train", None, "compose:val"),  # the set's own val split, not HumanEval's
    ("compose:train", "compose:test", "compose:test"),  # as given
    ("my_problems.jsonl", None, "humaneval:val"),
])
def test_validation_problems_follow_the_training_set(problems: str, given: str | None,
                                                     validated_on: str) -> None:
    config = TrainConfig(problems=problems, eval_problems=given)
    assert config.validation_problems == validated_on


def _pixels(path: Path) -> bytes:
    with Image.open(path) as img:
        return img.convert("RGB").tobytes()


def test_the_curves_draw_the_validation_figures_where_the_run_has_them(tmp_path: Path) -> None:
    from coopcode.evaluation.plots import plot_training

    history: list[dict[str, Any]] = [{"step": 0, "val/pass@1": 0.2, "val/own_work": 0.5}]
    history += [{"step": s, "reward/mean": 0.1 * s, "pass_rate": 0.05 * s, "loss": 0.1}
                for s in range(1, 7)]
    history[4].update({"val/pass@1": 0.4, "val/own_work": 0.6})
    history[6].update({"val/pass@1": 0.5, "val/own_work": 0.7})
    with_val = plot_training(history, "run", tmp_path / "with.png")
    plain = [{k: v for k, v in r.items() if not k.startswith("val/")} for r in history]
    without = plot_training(plain, "run", tmp_path / "without.png")
    # Without evaluations the figure is as before; with them it has more to show.
    assert _pixels(with_val) != _pixels(without)
    before = plot_training([r for r in plain if len(r) > 1], "run", tmp_path / "before.png")
    assert _pixels(before) == _pixels(without)


def test_the_tui_plots_validation_pass_at_1_as_its_own_series(process_sandbox: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tui.app import CoopApp
    from tui.demo import demo_engine
    from tui.session import AgentsSpec, Session
    from tui.widgets.plot import PlotView

    monkeypatch.chdir(tmp_path)  # checkpoints/ is relative: an empty one
    monkeypatch.setenv("COOPCODE_CACHE", str(tmp_path / "cache"))
    engine = demo_engine(delay=0.0)
    session = Session(AgentsSpec(sandbox="process"), engine_factory=lambda _m, _p: engine,
                      sandbox_opener=lambda _b, _w: process_sandbox)

    async def drive() -> dict[str, list[tuple[float, float]]]:
        app = CoopApp(session, mode="train", autoload=False)
        async with app.run_test(size=(100, 30)) as pilot:
            screen: Any = app.screen
            screen.handle_event(ev.Started(job="train", total=4))
            screen.handle_event(ev.Metric(step=0, values={"val/pass@1": 0.25,
                                                          "val/kept_step": 0.0}))
            for step in (1, 2):
                values = {"reward/mean": 1.0, "pass_rate": 0.5, "loss": 0.1}
                if step == 2:
                    values.update({"val/pass@1": 0.5, "val/kept_step": 2.0})
                screen.handle_event(ev.Metric(step=step, values=values))
            screen.handle_event(ev.Progress(done=2, total=4, label="step 2/4", eta_s=10))
            await pilot.pause()
            status.append(str(screen.query_one("#train-status").render()))
            screen.handle_event(ev.Finished(job="train", summary={
                "out": "checkpoints/x", "step": 3, "total_steps": 4, "stopped_early": True,
                "kept_step": 2}))
            await pilot.pause()
            status.append(str(screen.query_one("#train-status").render()))
            return dict(screen.query_one("#reward-plot", PlotView).series)

    status: list[str] = []
    series = asyncio.run(drive())
    assert "val pass@1 50.0% · kept step 2" in status[0]
    assert status[1] == "stopped itself at step 3/4 · step 2's adapters in checkpoints/x"
    assert series["val pass@1"] == [(0.0, 0.25), (2.0, 0.5)]
    assert series["pass rate"] == [(1.0, 0.5), (2.0, 0.5)]


def _evaluation(step: int, per_problem: list[float]) -> dict[str, Any]:
    """An evaluation as `validation.evaluations` gives it: its figures and per-problem row."""
    from coopcode.evaluation.stats import mean_interval

    est = mean_interval(per_problem)
    return {"step": step, "figures": {"val/pass@1": est.mean, "val/pass@1_se": est.se},
            "row": {"per_problem": {f"t{i}": {"pass@1": v} for i, v in enumerate(per_problem)}}}


def test_the_run_keeps_a_later_step_only_where_it_leads_by_two_standard_errors() -> None:
    from coopcode.training.validation import keep, since_best

    start = _evaluation(0, [0.0] * 20 + [1.0] * 4)
    better = _evaluation(15, [1.0] * 16 + [0.0] * 8)  # +12 problems: far beyond 2 SE
    slightly = _evaluation(30, [0.0] * 19 + [1.0] * 5)  # one problem more than the start
    fallen = _evaluation(45, [0.0] * 24)
    kept = keep([start, better, fallen])
    assert kept is not None
    assert (kept["step"], kept["best"], kept["preferred"]) == (15, 15, True)
    assert kept["val/pass@1"] == pytest.approx(16 / 24)
    # The best (30) does not lead the start by two standard errors: the start is kept.
    kept = keep([start, slightly, fallen])
    assert kept is not None and (kept["step"], kept["best"], kept["preferred"]) == (0, 30, False)
    # `last` keeps the last evaluation whatever it scored.
    kept = keep([start, better, fallen], "last")
    assert kept is not None and kept["step"] == 45
    assert keep([]) is None
    only = keep([start])
    assert only is not None and only["step"] == 0
    # --patience counts the evaluations since the last new best (an equal one is not new).
    assert since_best([start, better, fallen]) == 1
    assert since_best([start, better, slightly, fallen]) == 2
    assert since_best([start, _evaluation(15, [0.0] * 20 + [1.0] * 4)]) == 1
    assert since_best([start]) == 0


def test_a_run_keeps_its_best_step_publishes_the_last_beside_it_and_stops_itself(
        tiny_model_dir: Path, auto_sandbox: Any, tmp_path: Path) -> None:
    """The tiny model passes no validation problem, so every evaluation ties at 0: the run
    keeps step 0 (its start) as its adapters while it learns from a reward with a spread,
    puts the last step's in last/, and with --patience 2 stops itself after two evaluations
    without a new best. A resume goes no further until the patience grows."""
    from coopcode.core import events as ev
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.training import output_scorer, train

    def second(problem: Any, action: Any, node: Any) -> float:  # a reward with a spread
        return float(action.members["main"])

    out = tmp_path / "kept"
    config = TrainConfig(steps=4, group_size=2, max_new_tokens=8, limit=2, temperature=2.0,
                         warmup_steps=0, learning_rate=1e-2, eval_every=1, eval_limit=2,
                         eval_n=1, patience=2)

    def run(resume: bool = False, **changes: Any) -> list[Any]:
        seen: list[Any] = []
        engine = TransformersEngine(str(tiny_model_dir), dtype="float32")
        try:
            train(TrainConfig(**{**config.to_dict(), **changes}), out, resume=resume,
                  engine=engine, sandbox=auto_sandbox, scorer=output_scorer(second),
                  emit=seen.append, explicit=set(changes))
        finally:
            engine.close()
        return [e.message for e in seen if isinstance(e, ev.Log)]

    said = run()
    assert [r["step"] for r in _records(out)] == [0, 1, 2]  # stopped itself after step 2
    assert [r["val/kept_step"] for r in _records(out)] == [0, 0, 0]  # the curve says which
    assert any(r.get("grad_norm", 0) > 0 for r in _records(out))  # it learned
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["step"] == 2 and manifest["stopped_early"] is True
    assert manifest["kept"]["step"] == 0 and manifest["last"] == "last"
    assert any("stopping at step 2" in m for m in said)
    assert any(m.startswith("keeping step 0") for m in said)
    val = out / "validation"
    for role in ("helper", "main"):
        assert _same_weights(out / role, val / "step-000000" / "adapters" / role)
        assert _same_weights(out / "last" / role, val / "step-000002" / "adapters" / role)
        assert _same_weights(out / "last" / role, out / "trainer_state" / "step-000002" / role)
    assert not _same_weights(out / "main", out / "last" / "main")
    listed = coopcode("checkpoints", "list", "--dir", str(tmp_path))
    assert listed.returncode == 0 and "kept 0; last 2/4 stopped itself" in listed.stdout
    shown = coopcode("checkpoints", "show", str(out))
    assert "adapters: step 0's" in shown.stdout, shown.stdout
    assert f"the last step's in {out / 'last'}" in " ".join(shown.stdout.split())
    # resumed with the same patience: nothing more to do
    said = run(resume=True)
    assert any("stopped itself at step 2" in m for m in said)
    assert [r["step"] for r in _records(out)] == [0, 1, 2]
    run(resume=True, patience=5)
    assert [r["step"] for r in _records(out)] == [0, 1, 2, 3, 4]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["step"] == 4 and manifest["kept"]["step"] == 0
    assert manifest["stopped_early"] is False
    assert _same_weights(out / "last" / "main", out / "trainer_state" / "step-000004" / "main")
