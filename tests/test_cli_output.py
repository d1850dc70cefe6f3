"""What the commands print, read as a user reads it (issue 42, item 8): help grouped and
without type noise, plain lines on a pipe, a version."""

from __future__ import annotations

import os
import re

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
