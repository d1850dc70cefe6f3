"""A full disk under a bench and under a training run (a real tmpfs of a few hundred KB as
`--out`): one line and exit 2, the results file stays valid JSONL, the run folder keeps its
last complete save, and a rerun once space is freed resumes to the keys of an uninterrupted
run, none lost or doubled."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import REPO, assert_one_line_error, coopcode


def _mount(path: Path, size: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join((f"size={size}", *options)),
                           "tmpfs", str(path)], capture_output=True, text=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 300 KB tmpfs; `grow(small_disk)` gives it room later."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (these machines run the suite as root)")
    done = _mount(disk, "300k")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def grow(disk: Path, size: str = "8m") -> None:
    done = subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


def _jsonl(path: Path) -> list[dict]:
    text = path.read_text()
    assert text == "" or text.endswith("\n"), "a torn last line"
    return [json.loads(line) for line in text.splitlines()]


def test_a_bench_on_a_full_disk_stops_cleanly_and_resumes(small_disk: Path,
                                                          tiny_model_dir: Path) -> None:
    out = small_disk / "bench"
    grow(small_disk, "150k")  # about half of the 48 samples' records (~245 KB)
    args = ("bench", "--model", str(tiny_model_dir), "--problems", "humaneval:test", "--limit",
            "12", "--n", "4", "--k", "1", "--max-new-tokens", "32", "--sandbox", "process",
            "--dtype", "float32", "--out", str(out))
    done = coopcode(*args, timeout=900)
    assert_one_line_error(done, "samples.jsonl: cannot write (the disk is full)",
                          "samples written so far are kept", "rerun with the same --out")
    kept = _jsonl(out / "samples.jsonl")  # valid JSONL: no half line
    assert 0 < len(kept) < 48
    grow(small_disk)
    again = coopcode(*args, timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    records = _jsonl(out / "samples.jsonl")
    keys = [(r["task_id"], r["sample"]) for r in records]
    assert len(keys) == len(set(keys)) == 48  # none lost, none doubled
    assert records[:len(kept)] == kept  # what was kept is kept as it was


def test_a_training_on_a_full_disk_keeps_its_last_save_and_resumes(small_disk: Path,
                                                                    tiny_model_dir: Path) -> None:
    out = small_disk / "run"
    grow(small_disk, "400k")  # room for the first save (the tiny pair's adapters and state)
    done = coopcode("train", "--model", str(tiny_model_dir), "--steps", "30", "-G", "2",
                    "--max-new-tokens", "8", "--limit", "3", "--save-every", "1",
                    "--sandbox", "process", "--out", str(out), timeout=900)
    assert_one_line_error(done, "cannot write (the disk is full)", "the last complete save",
                          "rerun with --resume")
    manifest = json.loads((out / "manifest.json").read_text())
    saved = manifest["step"]
    states = sorted(p.name for p in (out / "trainer_state").iterdir())
    assert states == [f"step-{saved:06d}"]  # the complete save; no half-written one left
    for role in ("helper", "main"):
        assert (out / role / "adapter_model.safetensors").stat().st_size > 0
    assert [r["step"] for r in _jsonl(out / "metrics.jsonl")][:saved] == list(range(1, saved + 1))
    grow(small_disk)
    again = coopcode("train", "--resume", "--out", str(out), "--sandbox", "process", timeout=900)
    assert again.returncode == 0, again.stderr[-2000:]
    steps = [r["step"] for r in _jsonl(out / "metrics.jsonl")]
    assert steps == list(range(1, 31))
    assert [r["step"] for r in _jsonl(out / "samples.jsonl")] == list(range(1, 31))


def _ensure_disk(repo: Path, home: Path, job: str = "test") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(repo / "scripts" / "ensure_disk.sh"), "--for", job],
                          capture_output=True, text=True, timeout=60,
                          env={**{k: v for k, v in os.environ.items()
                                  if k not in ("COOPCODE_CACHE", "XDG_CACHE_HOME")},
                               "HOME": str(home)})


def test_make_refuses_in_one_line_when_the_disk_cannot_hold_the_set_up(small_disk: Path,
                                                                        tmp_path: Path) -> None:
    """`make test` and `make demo` first ask `scripts/ensure_disk.sh` (a copy of it on a real
    tmpfs here): too little room for what is still to set up is one line and exit 1, before
    anything is installed; enough room, or the parts already there, and it says nothing."""
    repo = small_disk / "clone"
    (repo / "scripts").mkdir(parents=True)
    (repo / "scripts" / "ensure_disk.sh").write_text(
        (REPO / "scripts" / "ensure_disk.sh").read_text())
    home = tmp_path / "home"
    home.mkdir()
    done = _ensure_disk(repo, home)
    assert done.returncode == 1 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("coopcode: 0.0 GB free on this disk; make test needs about 9.2 GB",
                                  ), done.stderr
    assert "make demo needs about 5.7 GB" in _ensure_disk(repo, home, "demo").stderr  # no vLLM env

    grow(small_disk, "10g")  # a cap, not memory taken: df reports it free
    done = _ensure_disk(repo, home)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")

    grow(small_disk, "3g")  # room for the suite's files only: enough once everything is set up
    assert _ensure_disk(repo, home).returncode == 1
    (repo / ".venv").mkdir()
    (repo / ".venv" / ".coopcode-installed").touch()
    (repo / ".venv-vllm").mkdir()
    model = home / ".cache" / "coopcode" / "models" / "qwen2.5-coder-0.5b-instruct"
    model.mkdir(parents=True)
    (model / "coopcode-model.json").write_text("{}")
    done = _ensure_disk(repo, home)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
