"""scripts/device_tree.sh: a device call can carry this repository (64 MiB with what it
carries) once the committed adapters' weights are hidden from the index, and `show` puts the
index back exactly. Run in a clone, never in the working tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT_MIB = 64.0


def _run(cwd: Path, *args: str) -> str:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=True).stdout


def _mib(line: str) -> float:
    return float(line.split(": ")[1].split(" MiB")[0])


def test_hide_makes_the_tree_fit_and_show_restores_it(tmp_path: Path) -> None:
    clone = tmp_path / "c"
    _run(tmp_path, "git", "clone", "-q", str(REPO), str(clone))
    script = REPO / "scripts" / "device_tree.sh"
    before = _run(clone, "git", "ls-files")
    hidden = _run(clone, "bash", str(script), "hide")
    assert "hid " in hidden and _mib(hidden.splitlines()[0].split("; ")[1]) < LIMIT_MIB - 30
    assert "adapter_model.safetensors" not in _run(clone, "git", "ls-files")
    assert subprocess.run(["bash", str(script), "hide"], cwd=clone,
                          capture_output=True).returncode == 2  # not twice
    _run(clone, "bash", str(script), "show")
    assert _run(clone, "git", "ls-files") == before
    assert _run(clone, "git", "status", "--porcelain") == ""
    assert "device_tree.sh hide" not in (clone / ".git" / "info" / "exclude").read_text()
