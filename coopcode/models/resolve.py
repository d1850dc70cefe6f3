"""From what a user types (`--model ...`) to a folder transformers can load."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coopcode.core.errors import ModelError
from coopcode.models.catalog import CATALOG, DEFAULT_MODEL
from coopcode.models.embedded import MARKER, convert, is_ready, model_dir


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # what the user asked for
    path: str  # a local folder, or a Hugging Face id transformers will fetch
    fingerprint: str  # a hash identifying the weights, recorded with every result
    instruct: bool | None  # None: decide from the tokenizer's chat template


def fingerprint_folder(path: Path) -> str:
    """sha256 over the config and the weights' names, sizes and first/last MB.

    Hashing every byte of multi-GB weights on each run would cost seconds to minutes; this
    changes whenever the weights are replaced, which is what the results record needs.
    """
    marker = path / MARKER
    if marker.exists():
        try:
            return str(json.loads(marker.read_text())["sha256"])
        except (KeyError, json.JSONDecodeError, OSError):
            pass
    h = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix in {".safetensors", ".bin", ".json", ".gguf"}):
            h.update(f.name.encode())
            size = f.stat().st_size
            h.update(str(size).encode())
            with open(f, "rb") as src:
                h.update(src.read(1 << 20))
                if size > 1 << 20:
                    src.seek(max(size - (1 << 20), 0))
                    h.update(src.read(1 << 20))
    return h.hexdigest()


def _check_model_config(config: Path, spec: str) -> None:
    """A config.json that transformers would choke on, refused before the load starts."""
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = None
    if not isinstance(data, dict):
        raise ModelError(f"{spec}: config.json is not a JSON object: re-download or re-save the model")


def _looks_like_hf_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "/", "~"))


def resolve_model(spec: str | None, progress: Callable[[str], None] = lambda _m: None) -> ResolvedModel:
    """Resolve a catalog name, a local model folder or a Hugging Face id."""
    spec = spec or DEFAULT_MODEL
    if spec in CATALOG:
        entry = CATALOG[spec]
        path = model_dir(entry) if is_ready(entry) else convert(entry, progress)
        return ResolvedModel(spec, str(path), entry.sha256, entry.instruct)
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"{spec}: a file, where a model folder is expected (config.json, "
                             "weights and tokenizer): pass the folder")
        if not (path / "config.json").exists():
            raise ModelError(f"{spec}: not a model folder (no config.json)")
        _check_model_config(path / "config.json", spec)
        return ResolvedModel(spec, str(path.resolve()), fingerprint_folder(path), None)
    if _looks_like_hf_id(spec):
        return ResolvedModel(spec, spec, f"hf:{spec}", None)
    names = ", ".join(CATALOG)
    raise ModelError(
        f"unknown model {spec!r}: use a catalog name ({names}), a local folder or a Hugging Face id"
    )
