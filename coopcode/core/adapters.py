"""Trained adapters on disk: where runs are looked for, which folder an adapter argument
names, what a run was trained with, and checking an adapter folder before it is loaded.

A run is a folder `RUN/` holding `helper/` and/or `main/` (PEFT adapter folders) and a
`manifest.json` whose `config` is the recipe it was trained with (`coopcode train`). Runs are
found by name in, in order: `./checkpoints`, each folder of `$COOPCODE_CHECKPOINTS`
(`os.pathsep`-separated), and the cache's `checkpoints/` (`coopcode.core.paths.cache_dir`).
So `--adapters compose-magrpo-0.5b` works from any folder once the runs are in one of those.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coopcode.core.errors import ModelError, UserError
from coopcode.core.paths import cache_dir

CHECKPOINTS_ENV = "COOPCODE_CHECKPOINTS"
ROLES = ("helper", "main")
LAST_DIR = "last"  # a run that kept a validated step holds its last step's adapters here


@dataclass(frozen=True)
class CheckpointRoot:
    """One folder runs are looked for in, and why it is on the list."""

    path: Path
    why: str  # "here", "COOPCODE_CHECKPOINTS" or "the cache"

    def __str__(self) -> str:
        return f"{self.path} ({self.why})"


def checkpoint_roots() -> list[CheckpointRoot]:
    """Where runs are looked for by name, in order (the first holding a name wins)."""
    roots = [CheckpointRoot(Path("checkpoints"), "here")]
    for part in os.environ.get(CHECKPOINTS_ENV, "").split(os.pathsep):
        if part.strip():
            roots.append(CheckpointRoot(Path(part.strip()).expanduser(), CHECKPOINTS_ENV))
    roots.append(CheckpointRoot(cache_dir() / "checkpoints", "the cache"))
    return roots


def looked_in() -> str:
    """`checkpoints (here), /runs (COOPCODE_CHECKPOINTS), ~/.cache/coopcode/checkpoints (the
    cache)`: the search path as a user reads it in a message (an unset variable said so)."""
    roots = [str(r) for r in checkpoint_roots()]
    if not os.environ.get(CHECKPOINTS_ENV, "").strip():
        roots.insert(1, f"${CHECKPOINTS_ENV} (not set)")
    return ", ".join(roots)


def adapter_roles(folder: Path) -> tuple[str, ...]:
    """The agents' adapters a run folder holds (`helper`, `main`)."""
    return tuple(r for r in ROLES if (folder / r / "adapter_config.json").is_file())


def _is_name(given: str) -> bool:
    """A run name rather than a path: no folder separator, not `.` or `..`."""
    return bool(given) and "/" not in given and os.sep not in given and given not in (".", "..")


def find_run(given: str) -> Path | None:
    """The run folder `given` names: the folder itself, else a run of that name in the search
    path (`checkpoint_roots`); None when there is none."""
    path = Path(given).expanduser()
    if path.is_dir():
        return path
    if _is_name(given):
        for root in checkpoint_roots():
            if (root.path / given).is_dir():
                return root.path / given
    return None


def adapter_folder(given: str | None, role: str) -> str | None:
    """The adapter folder an argument names for `role`: a PEFT folder as given, `role/` of a
    run folder, or `role/` of a run found by name. A name found nowhere comes back as given
    (`check_adapter` then says where it looked)."""
    if not given:
        return None
    path = Path(given).expanduser()
    if (path / role / "adapter_config.json").is_file():
        return str(path / role)
    if path.exists():
        return str(path)
    run = find_run(given)
    if run is not None:
        return str(run / role) if (run / role).is_dir() else str(run)
    return str(path)


@dataclass(frozen=True)
class TrainedWith:
    """What a run's adapters were trained with (its manifest's `config`): the defaults a
    command or the TUI takes when they are loaded. None: the run does not say."""

    run: str  # the run folder's name
    folder: Path
    algorithm: str
    scheme: str | None  # as trained, a `+code` variant included; GRPO's is `single`
    reward: str | None  # None: the algorithm's seed reward, the scheme's default too
    problems: str | None  # the training set

    @property
    def held_out(self) -> str | None:
        """The built-in split to judge the run on: `compose:train` -> `compose:test` (the
        problems it never saw); None for a set of the user's own."""
        name, _, split = (self.problems or "").partition(":")
        if name in ("humaneval", "compose") and split in ("train", "fit", "val", "test"):
            return f"{name}:test"
        return None

    def words(self) -> str:
        """`scheme contract, reward own`: the defaults it gives, as a message says them."""
        parts = [f"scheme {self.scheme}" if self.scheme else "",
                 f"reward {self.reward}" if self.reward else ""]
        return ", ".join(p for p in parts if p) or "nothing it records"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def run_of_adapter(adapter: str | Path) -> Path | None:
    """The run folder an adapter folder belongs to (`RUN/helper`, `RUN/last/main`, or the run
    folder itself), or None for an adapter that is no run's."""
    path = Path(adapter).expanduser()
    candidates = [path, path.parent]
    if path.parent.name == LAST_DIR:
        candidates.append(path.parent.parent)
    for folder in candidates:
        if (folder / "manifest.json").is_file() or (folder / "config.json").is_file():
            return folder
    return None


def read_trained_with(run: Path) -> TrainedWith:
    """What the run in `run` was trained with (`manifest.json`'s config, else `config.json`)."""
    manifest = _read_json(run / "manifest.json")
    config = manifest.get("config")
    if not isinstance(config, dict):
        config = _read_json(run / "config.json")
    algorithm = str(manifest.get("algorithm") or config.get("algo") or "?")

    def text(key: str) -> str | None:
        value = config.get(key)
        return value if isinstance(value, str) and value else None

    # GRPO trains one agent under `single`, whatever `--scheme` said (earlier runs: sequential).
    scheme = "single" if algorithm == "grpo" else text("scheme")
    return TrainedWith(run.name, run, algorithm, scheme, text("reward"), text("problems"))


def trained_with(helper: str | None, main: str | None) -> TrainedWith | None:
    """The run whose defaults the agents' adapters (folders, runs or run names, as a flag
    takes them) bring: main's run (the entry point's author), else the helper's; None when
    neither adapter is a run's."""
    for role, given in (("main", main), ("helper", helper)):
        folder = adapter_folder(given, role)
        run = run_of_adapter(folder) if folder else None
        if run is not None:
            return read_trained_with(run)
    return None


@dataclass(frozen=True)
class ChosenAdapters:
    """Each agent's adapter folder as a command's flags chose it, and the run they came from."""

    helper: str | None
    main: str | None
    run: TrainedWith | None  # whose training settings become the defaults


def choose_adapters(run: str | None, helper: str | None, main: str | None) -> ChosenAdapters:
    """`--adapters RUN` (a pair's helper and main, or one agent's), with `--helper-adapter` /
    `--main-adapter` over it; UserError, one line, for a run that cannot be found or a pair's
    run given to one agent alone (which would leave the other untrained, quietly)."""
    chosen: dict[str, str | None] = {"helper": None, "main": None}
    if run is not None:
        folder = find_run(run)
        if folder is None:
            raise UserError(f"--adapters {run}: no such run (looked in {looked_in()}; "
                            "`coopcode checkpoints list` lists them)")
        roles = adapter_roles(folder)
        if not roles:
            if (folder / "adapter_config.json").is_file():
                raise UserError(f"--adapters {run}: one adapter, not a run: pass it with "
                                "--helper-adapter or --main-adapter")
            raise UserError(f"--adapters {run}: {folder} holds no helper/ or main/ adapter "
                            "(`coopcode checkpoints list` lists the runs)")
        chosen.update({role: str(folder / role) for role in roles})
    for role, given in (("helper", helper), ("main", main)):
        if given is None:
            continue
        folder = find_run(given)
        if folder is not None and len(adapter_roles(folder)) == 2 and run is None \
                and (main if role == "helper" else helper) is None:
            raise UserError(
                f"--{role}-adapter {given}: a pair's run (helper and main): --adapters {given} "
                f"loads both; for the {role}'s alone pass {folder / role}")
        chosen[role] = adapter_folder(given, role)
    return ChosenAdapters(chosen["helper"], chosen["main"],
                          trained_with(chosen["helper"], chosen["main"]))


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """coopcode's manifest for an adapter (in its folder or the run folder above it)."""
    for manifest in (folder / "manifest.json", folder.parent / "manifest.json"):
        if manifest.exists():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                return None
            return data if isinstance(data, dict) else None
    return None


def check_adapter(path: str | Path, base_fingerprint: str, base_name: str) -> Path:
    """The adapter folder, or a ModelError saying in one line why it cannot be used."""
    folder = Path(path).expanduser()
    if not folder.exists():
        if _is_name(str(path)):
            raise ModelError(f"adapter {path}: no such folder, nor a run of that name (looked in "
                             f"{looked_in()}; `coopcode checkpoints list` lists them)")
        raise ModelError(f"adapter {path}: no such folder")
    if not folder.is_dir():
        raise ModelError(f"adapter {path}: a file, where an adapter folder is expected "
                         "(a PEFT folder with adapter_config.json, or a run's name or folder)")
    if not (folder / "adapter_config.json").exists():
        roles = adapter_roles(folder)
        if roles:
            raise ModelError(f"adapter {path}: a run holding {' and '.join(roles)}: pass "
                             f"{folder / roles[0]}, or the run with --adapters")
        raise ModelError(f"adapter {path}: not a PEFT adapter folder (no adapter_config.json)")
    try:
        config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        config = None
    if not isinstance(config, dict):
        raise ModelError(f"adapter {path}: adapter_config.json is not a JSON object: "
                         "re-save the adapter with PEFT")
    if not any((folder / n).exists() for n in ("adapter_model.safetensors", "adapter_model.bin")):
        raise ModelError(f"adapter {path}: no adapter weights (adapter_model.safetensors)")
    if config.get("peft_type", "LORA") != "LORA":
        raise ModelError(f"adapter {path}: a {config.get('peft_type')} adapter; coopcode loads LoRA")
    manifest = read_manifest(folder)
    if manifest:
        base = manifest.get("base", {})
        trained_on = base.get("fingerprint") if isinstance(base, dict) else None
        if trained_on and base_fingerprint and trained_on != base_fingerprint:
            name = base.get("name", "another model")
            raise ModelError(
                f"adapter {path} was trained on {name} ({trained_on[:12]}), not on "
                f"{base_name} ({base_fingerprint[:12]}): load it with --model {name}"
            )
    return folder
