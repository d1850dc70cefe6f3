"""The in-process vLLM engine, run for real: vLLM's CPU build (in .venv-vllm, its own venv
because it pins an older transformers) on the embedded model with both committed adapters."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest
from vllm_env import DEMO, REPO, vllm_env, vllm_python_or_skip

from coopcode.core.errors import ModelError


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_engine_says_how_to_get_it() -> None:
    from coopcode.engines import load_engine

    with pytest.raises(ModelError, match=r"pip install 'coopcode\[vllm\]'"):
        load_engine(None, "vllm")


@pytest.mark.slow
@pytest.mark.vllm
def test_the_vllm_engine_with_two_adapters_on_this_cpu(tmp_path: Path) -> None:
    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir

    python = vllm_python_or_skip()
    done = subprocess.run(
        [str(python), str(REPO / "tests" / "vllm_inprocess_check.py"),
         str(model_dir(CATALOG[DEFAULT_MODEL])), str(DEMO / "helper"), str(DEMO / "main")],
        capture_output=True, text=True, timeout=900, env=vllm_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))[7:])
    # Per-sample seeds: the same request twice gives the same samples, they differ from
    # each other, and sample 2 asked for alone is sample 2 of the three.
    assert seen["samples"] == seen["again"] and len(set(seen["samples"])) > 1
    assert seen["sample_2_alone"] == seen["samples"][2]
    assert all(t > 0 for t in seen["tokens"])
    # Bug B of the CPU build: a base request batched with adapter requests keeps the base.
    assert seen["base_mixed"] == seen["base_alone"]
    # submit() (what the scheduler uses) gives what generate gives; deltas add up.
    assert seen["submitted"] == seen["main"] == seen["streamed"]
