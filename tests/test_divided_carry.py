"""`docs/divided/scripts/carry_run.sh`: an unfinished run packed into a folder that git can
hold, unpacked on a machine that has nothing else of it, and resumed there, takes the steps
the uninterrupted run takes (the tiny model, `--deterministic`, real validations)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

REPO = Path(__file__).resolve().parent.parent
CARRY = REPO / "docs" / "divided" / "scripts" / "carry_run.sh"
TIMINGS = {"gen_seconds", "score_seconds", "update_seconds", "step_seconds", "tokens_per_s",
           "step_peak_rss_mb", "peak_rss_mb", "rss_mb", "val/seconds"}


def _argv(model: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "coopcode", "train", "--model", str(model), "--algo", "magrpo",
            "--steps", "4", "--save-every", "1", "--eval-every", "2", "--keep-eval-adapters",
            "--problems", "humaneval:train", "--limit", "4", "--eval-problems", "humaneval:val",
            "--eval-limit", "2", "--eval-n", "2", "--group-size", "2", "--max-new-tokens", "6",
            "--deterministic", "--seed", "5", "--sandbox", "process", "--out", str(out),
            "--events", "jsonl"]


def _sh(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(CARRY), *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _steps(run: Path) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMINGS} for r in _lines(run / "metrics.jsonl")]


@pytest.fixture(scope="module")
def runs(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("carry")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    whole = subprocess.run(_argv(tiny_model_dir, root / "whole"), capture_output=True, text=True,
                           env=env, timeout=600)
    assert whole.returncode == 0, whole.stderr

    # The same run stopped after step 3 (Ctrl+C: it saves), as a session's end stops one.
    stopped = subprocess.Popen(_argv(tiny_model_dir, root / "stopped"), stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        assert stopped.stdout is not None
        for line in stopped.stdout:
            event = json.loads(line) if line.strip() else {}
            if event.get("type") == "metric" and event.get("step") == 3:
                stopped.send_signal(signal.SIGINT)
                break
        stopped.communicate(timeout=300)
    finally:
        if stopped.poll() is None:
            stopped.kill()
    assert stopped.returncode == 130
    return {"root": root, "whole": root / "whole", "stopped": root / "stopped"}


def test_a_packed_run_holds_what_resume_needs_and_no_more(runs: dict[str, Path]) -> None:
    carried = runs["root"] / "carried" / "magrpo"
    packed = _sh("pack", runs["stopped"], carried)
    assert packed.returncode == 0, packed.stderr
    assert "state step-000003" in packed.stdout
    names = {str(p.relative_to(carried)) for p in carried.rglob("*") if p.is_file()}
    assert {"config.json", "metrics.jsonl", "manifest.json", "samples.jsonl.gz",
            "trainer_state/step-000003/trainer.pt", "trainer_state/step-000003/state.json",
            "validation/step-000000/summary.json", "validation/step-000002/samples.jsonl.gz",
            "validation/step-000002/adapters/main/adapter_model.safetensors",
            "validation/step-000002/adapters/helper/adapter_model.safetensors"} <= names
    # The run keeps its best validated step (--keep-step best): it publishes that step's
    # adapters from its evaluation's, so every evaluation's are carried, step 0's too; the
    # top-level adapters are not (the resumed run publishes them again), and the bench
    # folders' reports are rewritten by the next evaluation.
    assert json.loads((runs["stopped"] / "manifest.json").read_text())["last"] == "last"
    assert "validation/step-000000/adapters/main/adapter_model.safetensors" in names
    assert not any(n.startswith(("helper/", "main/", "last/")) for n in names), names
    assert not any(n.endswith((".png", ".md")) for n in names), names


def test_unpacked_elsewhere_and_resumed_it_takes_the_uninterrupted_steps(
        runs: dict[str, Path], tiny_model_dir: Path) -> None:
    carried = runs["root"] / "carried2" / "magrpo"
    assert _sh("pack", runs["stopped"], carried).returncode == 0
    fresh = runs["root"] / "fresh-machine" / "runs" / "magrpo"
    unpacked = _sh("unpack", carried, fresh)
    assert unpacked.returncode == 0, unpacked.stderr
    assert "resumes from step-000003" in unpacked.stdout
    assert not list(fresh.rglob("*.gz"))
    again = _sh("unpack", carried, fresh)  # never over a run that is there
    assert again.returncode == 1 and "already holds a run" in again.stderr

    resumed = subprocess.run([sys.executable, "-m", "coopcode", "train", "--resume", "--out",
                              str(fresh), "--sandbox", "process"], capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    whole = runs["whole"]
    assert [r["step"] for r in _lines(fresh / "metrics.jsonl")] == [0, 1, 2, 3, 4]
    assert _steps(fresh) == _steps(whole)  # every reward, loss and validation figure
    assert _lines(fresh / "samples.jsonl") == _lines(whole / "samples.jsonl")
    for role in ("helper", "main"):
        a = load_file(str(fresh / role / "adapter_model.safetensors"))
        b = load_file(str(whole / role / "adapter_model.safetensors"))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), role


def test_packing_a_run_never_saved_or_unpacking_nothing_says_so(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    packed = _sh("pack", tmp_path / "run", tmp_path / "carried")
    assert packed.returncode == 1 and "has no saved trainer state" in packed.stderr
    assert not (tmp_path / "carried").exists()
    unpacked = _sh("unpack", tmp_path / "nothing", tmp_path / "out")
    assert unpacked.returncode == 1 and "holds no carried run" in unpacked.stderr


@pytest.mark.parametrize(("scores", "choosable"), [
    ({0: 0.10, 45: 0.05, 90: 0.08}, [0]),  # step 0 beats both: whatever 135 scores, not them
    ({0: 0.10, 45: 0.15, 90: 0.05}, [45]),
    ({0: 0.10, 45: 0.10}, [45]),  # a tie goes to the later step
    ({0: 0.05, 45: 0.10, 90: 0.0}, [45]),
    ({0: 0.05, 45: 0.10, 90: 0.15}, [90]),
    ({0: 0.0}, [0]),
])
def test_only_steps_the_rule_could_still_pick_keep_their_adapters(
        tmp_path: Path, scores: dict[int, float], choosable: list[int]) -> None:
    (tmp_path / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "val/pass@1": v}) + "\n" + json.dumps({"step": s + 1}) + "\n"
        for s, v in scores.items()))
    out = subprocess.run([sys.executable, str(CARRY.with_name("chosen_step.py")), "--choosable",
                          str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(s) for s in choosable]
    # The rule's pick among the steps so far is always one of them.
    best = max(scores, key=lambda s: (scores[s], s))
    assert best in choosable


def _bench(model: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coopcode", "bench", "--model", str(model), "--problems",
         str(REPO / "examples"), "--n", "2", "--k", "1", "--max-new-tokens", "16", "--dtype",
         "float32", "--deterministic", "--sandbox", "process", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "120"})


def test_a_bench_stopped_half_way_is_carried_and_resumes_elsewhere(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    """pause.sh carries a bench a session's end stopped (`pack-bench`: meta.json and its
    samples so far, gzipped); next.sh unpacks it on a machine whose runs/ has none, and the
    bench resumes from its next sample: the uninterrupted bench's samples, none drawn twice."""
    whole = tmp_path / "whole"
    assert _bench(tiny_model_dir, whole).returncode == 0
    records = (whole / "samples.jsonl").read_text().splitlines()
    stopped = tmp_path / "stopped"  # what a stopped bench leaves: no summary yet
    stopped.mkdir()
    (stopped / "meta.json").write_bytes((whole / "meta.json").read_bytes())
    (stopped / "samples.jsonl").write_text("\n".join(records[:len(records) // 2]) + "\n")

    assert _sh("pack-bench", whole, tmp_path / "no").returncode == 1  # finished: keep it instead
    carried = tmp_path / "carried" / "bench" / "final" / "row"
    packed = _sh("pack-bench", stopped, carried)
    assert packed.returncode == 0, packed.stderr
    assert sorted(p.name for p in carried.iterdir()) == ["meta.json", "samples.jsonl.gz"]
    elsewhere = tmp_path / "other-machine" / "runs" / "final" / "row"
    assert _sh("unpack", carried, elsewhere).returncode == 0
    resumed = _bench(tiny_model_dir, elsewhere)
    assert resumed.returncode == 0, resumed.stderr

    def keyed(folder: Path) -> dict[tuple, tuple]:
        rows = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
        return {(r["scheme"], r["task_id"], r["sample"]): (r["helper_code"], r["main_code"])
                for r in rows}
    assert len((elsewhere / "samples.jsonl").read_text().splitlines()) == len(records)
    assert keyed(elsewhere) == keyed(whole)
    def passed(folder: Path) -> list[tuple]:
        return [(r["scheme"], r["samples"], r["pass@1"])
                for r in json.loads((folder / "summary.json").read_text())["rows"]]
    assert passed(elsewhere) == passed(whole)
