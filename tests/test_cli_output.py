"""What the commands print, read as a user reads it (issue 42, item 8): help grouped and
without type noise, plain lines on a pipe, a version."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from cli_helpers import coopcode


def test_help_puts_core_options_first_and_the_engines_in_their_own_panel() -> None:
    done = coopcode("bench", "--help", env={**os.environ, "COLUMNS": "100"})
    assert done.returncode == 0, done.stderr
    panels = re.findall(r"╭─ (.+?) ─", done.stdout)
    assert panels == ["Options", "Output", "Engine (where the model runs)"], panels
    options, engine = done.stdout.split("╭─ Engine", 1)
    assert "--n " in options and "--k " in options and "--engine " not in options
    assert "--engine " in engine and "--max-batch" in engine and "--kv-cache-gb" in engine
    for noise in ("<bool>", "<str>", "<int>", "<float>"):
        assert noise not in done.stdout, noise
    assert re.search(r"--k\s+N,N,\.\.\.", done.stdout) and re.search(r"--n\s+N\s", done.stdout)


def test_piped_output_is_plain_lines_never_wrapped_or_padded() -> None:
    done = coopcode("checkpoints", "show", "magrpo-credit-0.5b")  # stdout: a pipe
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.endswith(" ")], "no padding at a line's end"
    config = next(line for line in lines if line.startswith("reward credit; config:"))
    assert "seed=0" in config, "one line, as long as it is, not wrapped at 80 columns"


def test_version() -> None:
    done = coopcode("--version")
    assert done.returncode == 0 and re.fullmatch(r"coopcode \d+\.\d+\.\d+\n", done.stdout), done


def test_arguments_read_as_names_in_help() -> None:
    done = coopcode("solve", "--help", env={**os.environ, "COLUMNS": "100"})
    assert "Usage: coopcode solve [OPTIONS] PROBLEM" in done.stdout and "{problem}" not in done.stdout


def test_a_finished_bench_reruns_without_loading_the_model_and_prints_cooperation(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    args = ("bench", "--model", str(tiny_model_dir), "--limit", "2", "--n", "1", "--k", "1",
            "--max-new-tokens", "8", "--sandbox", "process", "--out", str(tmp_path / "run"),
            "--dtype", "float32")
    first = coopcode(*args)
    assert first.returncode == 0, first.stderr
    # The text output and report.md carry the pair's cooperation rates, as summary.json.
    assert "main calls the helper" in first.stdout and "does own work with it" in first.stdout
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Who did the work" in report and "| main calls helper |" in report
    started = time.monotonic()
    again = coopcode(*args)
    took = time.monotonic() - started
    assert again.returncode == 0, again.stderr
    assert "already complete, nothing to run (no model loaded)" in again.stderr
    assert "loading" not in again.stderr
    assert again.stdout == first.stdout.replace(first.stdout.splitlines()[-1],
                                                again.stdout.splitlines()[-1])
    print(f"rerun of a finished bench: {took:.1f} s")
    # Anything that changes the run goes the usual way (here: one more sample each).
    more = coopcode(*[a if a != "1" or i != args.index("--n") + 1 else "2"
                      for i, a in enumerate(args)])
    assert more.returncode == 0 and "already complete" not in more.stderr
