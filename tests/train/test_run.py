"""`coopcode.training.train` from Python: a plain reward function, events, the run folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coopcode.core import events as ev
from coopcode.training import TrainConfig, output_scorer, train


def test_train_from_python_with_a_plain_reward_function(make_engine: Any, tiny_model_dir: Path,
                                                        tmp_path: Path) -> None:
    seen: list[ev.Event] = []

    def calls_aux(problem: Any, action: Any, node: Any) -> float:
        return float("aux" in node.samples["main"][action.members["main"]].text)

    out = tmp_path / "shaped"
    result = train(TrainConfig(steps=2, group_size=2, max_new_tokens=4, limit=3, save_every=1),
                   out, engine=make_engine(tiny_model_dir), scorer=output_scorer(calls_aux),
                   emit=seen.append)
    assert (result.step, result.total_steps, result.stopped) == (2, 2, False)
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "Started" and kinds[-1] == "Finished"
    metrics = [e for e in seen if isinstance(e, ev.Metric)]
    assert [m.step for m in metrics] == [1, 2]
    for key in ("reward/mean", "reward/std", "reward/score", "pass_rate", "loss", "grad_norm",
                "tokens_per_s", "step_seconds", "step_peak_rss_mb", "peak_rss_mb", "rss_mb",
                "main/constant_answers"):
        assert key in metrics[0].values, key
    # The curves carry the terms the reward has: a plain function has one, `score`.
    assert not {"reward/syntax", "reward/runs", "reward/tests"} & set(metrics[0].values)
    saves = [e.message for e in seen if isinstance(e, ev.Log) and "checkpoint" in e.message]
    assert saves == [f"checkpoint step 1: {out}", f"checkpoint step 2: {out}"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["metrics"]["reward_mean"] is not None and manifest["step"] == 2


def test_ranks_probing_one_run_folder_at_once_do_not_trip_each_other(tmp_path: Path) -> None:
    # torchrun's ranks all call check_writable on the same --out at the same moment; with one
    # shared probe name a rank could find its probe already deleted by another.
    import threading

    from coopcode.training.checkpoint import check_writable

    out, errors, start = tmp_path / "run", [], threading.Barrier(8)

    def rank() -> None:
        start.wait()
        for _ in range(300):
            try:
                check_writable(out)
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)

    threads = [threading.Thread(target=rank) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and list(out.iterdir()) == []


def test_every_algorithm_has_the_trainer_of_its_name() -> None:
    # `--algo X` builds TRAINERS[X]: an algorithm the config accepts without a trainer would
    # fail only once the model had loaded.
    from coopcode.training.algorithms import TRAINERS
    from coopcode.training.config import ALGOS

    assert set(TRAINERS) == set(ALGOS)
    assert all(TRAINERS[algo].algorithm == algo for algo in ALGOS)
