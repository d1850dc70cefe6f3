"""Cooperation patterns tracked while training, and `checkpoints show RUN --plot`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from PIL import Image

from coopcode.code_analysis.patterns import PATTERNS
from coopcode.core import events as ev
from coopcode.training import TrainConfig, output_scorer, train
from tests.cli_helpers import assert_one_line_error, coopcode

REPO = Path(__file__).resolve().parent.parent.parent


def test_every_step_logs_the_pattern_rates(make_engine: Any, tiny_model_dir: Path,
                                           tmp_path: Path) -> None:
    seen: list[ev.Event] = []
    out = tmp_path / "run"
    # The tiny random model writes noise; the rates must still be there, one per pattern,
    # each a share of the step's joint actions.
    train(TrainConfig(steps=1, group_size=2, max_new_tokens=4, limit=2, save_every=1), out,
          engine=make_engine(tiny_model_dir), scorer=output_scorer(lambda *_: 0.0),
          emit=seen.append)
    (metric,) = [e for e in seen if isinstance(e, ev.Metric)]
    for name in PATTERNS:
        assert 0.0 <= metric.values[f"coop/{name}"] <= 1.0, name
    logged = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert all(f"coop/{name}" in logged for name in PATTERNS)


def _open_png(path: Path) -> None:
    with Image.open(path) as img:
        assert img.format == "PNG" and img.width >= 1000 and img.height >= 700
        lo, hi = img.convert("L").getextrema()
        assert hi - lo > 100  # lines and text, not a blank canvas


def test_checkpoints_show_plot_writes_the_curves(tmp_path: Path) -> None:
    # The committed demo run (its metrics.jsonl predates pattern metrics), in a copy: the
    # command writes beside the run and the repository's folder stays as committed.
    run = tmp_path / "demo"
    shutil.copytree(REPO / "checkpoints" / "magrpo-0.5b-demo", run,
                    ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    with open(run / "metrics.jsonl", "a") as f:  # a later step that logged the patterns
        f.write(json.dumps({"step": 21, "reward/mean": 1.0, "pass_rate": 0.5, "loss": 0.1,
                            **{f"coop/{p}": 0.2 for p in PATTERNS}}) + "\n")
    done = coopcode("checkpoints", "show", str(run), "--plot")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"curves: {run / 'curves.png'}"
    _open_png(run / "curves.png")
    as_json = json.loads(coopcode("checkpoints", "show", str(run), "--plot", "--json").stdout)
    assert as_json["curves_png"] == str(run / "curves.png")


def test_plot_of_a_run_without_metrics_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "fresh"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"algorithm": "magrpo"}))
    assert_one_line_error(coopcode("checkpoints", "show", str(run), "--plot"), "no metrics.jsonl")
