"""Checking an adapter folder before loading it onto a base model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coopcode.core.errors import ModelError


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
        raise ModelError(f"adapter {path}: no such folder")
    if not folder.is_dir():
        raise ModelError(f"adapter {path}: a file, where an adapter folder is expected "
                         "(a PEFT folder with adapter_config.json, or checkpoints/<run>)")
    if not (folder / "adapter_config.json").exists():
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
