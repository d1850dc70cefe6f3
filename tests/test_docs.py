"""The documentation site builds as `make docs` builds it (offline, `mkdocs build --strict`: a
broken link, a missing anchor or a page left out of the nav fails), with the pages written from
the code at each build; and the README's links lead to files that are there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_site_builds_strictly_with_its_generated_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    # The command reference: every command, from typer's own docs output.
    cli = (site / "reference" / "cli" / "index.html").read_text()
    for command in ("coopcode solve", "coopcode bench", "coopcode train", "coopcode tui",
                    "coopcode problems show", "coopcode sandbox build", "coopcode checkpoints list"):
        assert f"<code>{command}</code>" in cli, command
    # The Python API: an entry per exported name (the hook refuses a name it does not list).
    api = (site / "reference" / "api" / "index.html").read_text()
    for name in ("run_bench", "BenchConfig", "load_problems", "register_reward", "Scheme"):
        assert re.search(rf'id="[\w.]*\.{name}"', api), name
    # The TUI's screens, drawn by the running app, and each screen's keys read from it.
    for name in ("screen-agents", "screen-train", "screen-bench", "collaborate-contract"):
        assert (site / "screens" / f"{name}.svg").read_text().startswith("<svg"), name
    tui = (site / "guide" / "tui" / "index.html").read_text()
    assert "keys:" not in tui and tui.count("Ctrl+R") >= 4


def test_the_readme_links_lead_somewhere() -> None:
    readme = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [link for link in links if "://" not in link]
    assert local, "the README links to no page"
    for link in local:
        assert (REPO / link).exists(), link
