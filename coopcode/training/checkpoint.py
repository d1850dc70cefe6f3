"""A run folder on disk: adapters, manifest, resumable trainer state.

```
checkpoints/<run>/
  manifest.json          base model (name, fingerprint), algorithm, config, step, metrics
  config.json            the run's TrainConfig, written when the run starts
  helper/ main/          standard PEFT adapter folders (GRPO: main/ only): the kept step's
                         (manifest.kept.step) where validation keeps the best, else the last
  last/helper/ ...       with --keep-step best: the last step's adapters (manifest.step)
  metrics.jsonl          one line per step
  trainer_state/step-N/  what --resume needs: the adapters, optimizer, scheduler, RNG, step
```

Crash safety: a state is written into `step-N.partial/` and renamed to `step-N/` when
complete, so a complete-looking folder is complete; `--resume` takes the newest one. The
top-level adapters and manifest are published after that, by atomic renames, and are
republished from the state on resume, so a kill between the two steps loses nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coopcode import __version__
from coopcode.core.errors import UserError

STATE_DIR = "trainer_state"
LAST_DIR = "last"  # the last step's adapters, where the top level holds the kept step's
_STEP = re.compile(r"^step-(\d+)$")


def check_writable(out: Path) -> None:
    """Create `out` and prove we can write there, or a UserError saying so."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        # A name of this process's own: torchrun's ranks all probe the same folder at once.
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UserError(f"cannot write to {out}: {e.strerror or e}") from None


def write_json_atomic(path: Path, data: object) -> None:
    """Replace `path` by a whole new version; on a failed write the old one stays."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def latest_state(out: Path) -> Path | None:
    """The newest complete trainer-state folder of a run, if any."""
    root = out / STATE_DIR
    if not root.is_dir():
        return None
    steps = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP.match(p.name)) and p.is_dir()]
    return max(steps)[1] if steps else None


def save_state(out: Path, step: int, trainer_state: dict[str, Any],
               save_adapters: Callable[[Path], None], info: dict[str, Any],
               keep: int = 1) -> Path:
    """Write the resumable state of `step`; keep the newest `keep` states.

    `save_adapters(folder)` writes the adapter folders (helper/, main/) into `folder`.
    """
    import torch

    root = out / STATE_DIR
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    partial = root / f"step-{step:06d}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        partial.mkdir()
        save_adapters(partial)
        torch.save(trainer_state, partial / "trainer.pt")
        (partial / "state.json").write_text(json.dumps({"step": step, **info}, indent=2, default=str))
    except BaseException as e:
        shutil.rmtree(partial, ignore_errors=True)  # the last complete state stays as it was
        # safetensors reports a failed write as its own error ("... (os error 28)"): make it
        # the OSError it is, so a full disk is told as one.
        found = re.search(r"os error (\d+)", str(e)) if not isinstance(e, OSError) else None
        if found:
            code = int(found.group(1))
            raise OSError(code, os.strerror(code)) from e
        raise
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    older = sorted((int(m.group(1)), p) for p in root.iterdir()
                   if (m := _STEP.match(p.name)) and p.is_dir())
    for _, p in older[:-keep]:
        shutil.rmtree(p, ignore_errors=True)
    for p in root.glob("*.partial"):
        shutil.rmtree(p, ignore_errors=True)
    return final


def load_state(state_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(trainer state dict, state.json) of a saved state."""
    import torch

    info = json.loads((state_dir / "state.json").read_text())
    # weights_only=False: the state holds Python RNG state (tuples), written by us.
    trainer = torch.load(state_dir / "trainer.pt", map_location="cpu", weights_only=False)
    return trainer, info


def publish_adapters(out: Path, state_dir: Path, roles: list[str], into: str = "") -> None:
    """Copy the state's adapter folders to the run's top level (or its folder `into`, e.g.
    `last`), each replaced by rename."""
    if into:
        out = out / into
        out.mkdir(exist_ok=True)
    for name in roles:
        src = state_dir / name
        if not src.is_dir():
            continue
        staging = out / f".{name}.new"
        old = out / f".{name}.old"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            # File by file (a PEFT folder is flat): a failed copy raises the OSError itself,
            # where copytree would gather it into a shutil.Error without its errno.
            staging.mkdir()
            for f in src.iterdir():
                shutil.copy2(f, staging / f.name)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)  # the published adapters stay as they were
            raise
        shutil.rmtree(old, ignore_errors=True)
        if (out / name).exists():
            os.replace(out / name, old)
        os.replace(staging, out / name)
        shutil.rmtree(old, ignore_errors=True)


def manifest(*, base_name: str, fingerprint: str, algorithm: str, config: dict[str, Any],
             step: int, total_steps: int, metrics: dict[str, Any], adapters: list[str],
             run: str) -> dict[str, Any]:
    """What `coopcode.core.adapters.check_adapter`, `checkpoints list` and the TUI read."""
    return {
        "run": run,
        "base": {"name": base_name, "fingerprint": fingerprint},
        "algorithm": algorithm,
        "adapters": adapters,
        "step": step,
        "total_steps": total_steps,
        "config": config,
        "metrics": metrics,
        "coopcode_version": __version__,
    }


def truncate_metrics(path: Path, step: int) -> None:
    """Drop lines after `step` (written by a run killed before its next save) from a
    step-keyed JSONL log (metrics.jsonl, samples.jsonl)."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line).get("step", 0) <= step:
                keep.append(line)
        except json.JSONDecodeError:
            continue  # a line cut by the kill
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(f"{x}\n" for x in keep))
    os.replace(tmp, path)
