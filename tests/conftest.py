"""Shared fixtures: the tiny random Qwen2 (fast tests), the embedded model, a sandbox."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Before any test module imports torch: importing coopcode sets OMP_WAIT_POLICY=PASSIVE,
# which torch's OpenMP reads once, when it starts. A test module importing torch first left
# OpenMP's idle workers spinning beside the engine's decode thread: a training test that
# takes 45 s took 197 s on 2 cores.
import coopcode  # noqa: F401

REPO = Path(__file__).resolve().parent.parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On make test's workers (pytest-xdist, `--dist loadgroup`) the vLLM tests run on one
    of them: they share its one `vllm serve` (a session fixture is one per worker), and
    two vLLM processes at once would hold twice the memory. First among the hooks: xdist
    reads the group marks in its own hook, and marks added after it are not seen (the vLLM
    tests then ran on both workers, each starting a server)."""
    for item in items:
        if item.get_closest_marker("vllm"):
            item.add_marker(pytest.mark.xdist_group("vllm"))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 with the real tokenizer: exercises loading, LoRA and sampling fast.

    COOPCODE_TINY_MODEL names one made already (scripts/gpu_check.sh builds it, from a
    carried config and tokenizer, on a machine that has no embedded model to take the
    tokenizer from)."""
    from coopcode.models.tiny import make_tiny_model

    given = os.environ.get("COOPCODE_TINY_MODEL")
    if given:
        return Path(given)
    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny-qwen2")


@pytest.fixture(scope="session")
def tiny_engine(tiny_model_dir: Path) -> Iterator[object]:
    from coopcode.engines.embedded.engine import TransformersEngine

    # fp32: the tiny model's outputs are compared across batch shapes; bf16 rounding would
    # make near-ties flip between batch sizes.
    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def tiny_deterministic_engine(tiny_model_dir: Path) -> Iterator[object]:
    """The tiny model generating every sample alone: text that is compared across batches.

    Batched arithmetic rounds by batch shape (fp32 too), and the tiny random model's nearly
    flat distributions turn such rounding into other tokens often enough to fail a test now
    and then; alone, a sample's arithmetic never depends on what else is generated."""
    from coopcode.engines.embedded.engine import TransformersEngine

    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", deterministic=True)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def real_engine() -> Iterator[object]:
    """The embedded Qwen2.5-Coder-0.5B-Instruct (make test prepares it before the tests)."""
    from coopcode.engines.embedded.engine import TransformersEngine

    engine = TransformersEngine(None)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def process_sandbox() -> Iterator[object]:
    from sandbox import open_sandbox

    with open_sandbox(backend="process") as sb:
        yield sb


@pytest.fixture(scope="session")
def auto_sandbox() -> Iterator[object]:
    """Docker when a daemon answers (it does under make test), else the process backend."""
    from sandbox import open_sandbox

    with open_sandbox(backend="auto", warn=lambda _m: None) as sb:
        yield sb


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    """Environment for running the `coopcode` CLI as a subprocess."""
    env = dict(os.environ)
    env.setdefault("COLUMNS", "120")
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """`vllm serve` (the CPU build, .venv-vllm) on 127.0.0.1: the embedded model with the
    committed pair as LoRA modules `helper` and `main`. Skips, with the reason, where the
    vLLM environment could not be built."""
    from vllm_env import VLLMServer, vllm_python_or_skip

    from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir

    vllm_python_or_skip()
    server = VLLMServer(model_dir(CATALOG[DEFAULT_MODEL]), tmp_path_factory.mktemp("vllm") / "serve.log")
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def measured_kernels_of_this_machine() -> Iterator[None]:
    """Every test, and every process a test starts, reads and writes the suite's own memory
    of the number format and kernels measured on this machine (`cpu-format.tests.json` beside
    `cpu_format.kernel_file()`, begun as a copy of it), even where it points COOPCODE_CACHE at
    an empty folder (the TUI's tests do): measuring them again would cost each engine ~25 s.
    The user's own file is never written by the suite: kernels measured while other tests
    (and the suite's second worker) load the cores can be the slower ones, and the user's
    engines would keep them. `kernel_memory` gives a test a fresh file instead."""
    from coopcode.engines.embedded.cpu_format import KERNEL_FILE_ENV, kernel_file

    users = kernel_file()
    suites = users.with_name(users.stem + ".tests.json")
    if not suites.exists() and users.exists():
        staged = suites.with_name(f".{suites.name}.{os.getpid()}")
        shutil.copyfile(users, staged)
        staged.replace(suites)  # whole or not at all: the second worker may copy it too
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KERNEL_FILE_ENV, str(suites))
        yield


class KernelMemory:
    """The file where the embedded engine remembers its measured number format and kernels
    (`cpu_format.kernel_file()`), kept apart for one test."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any]:
        return dict(json.loads(self.path.read_text()))

    def write(self, known: dict[str, Any]) -> None:
        """Plant `known`: settled answers, so any mark of a measurement taken under load is
        dropped (else an engine on a quiet machine would measure again: `cpu_format.stands`)."""
        settled = {k: ({f: x for f, x in v.items() if f != "busy"} if isinstance(v, dict) else v)
                   for k, v in known.items()}
        self.path.write_text(json.dumps(settled))

    def kernels_entry(self) -> tuple[str, dict[str, Any]]:
        """The one entry (key, value) that holds measured kernels."""
        ((key, entry),) = [(k, v) for k, v in self.read().items() if "kernels" in v]
        return key, entry


@pytest.fixture
def kernel_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KernelMemory:
    """A fresh kernel file for this test (and the processes it starts): engines made in it
    measure again."""
    from coopcode.engines.embedded.cpu_format import KERNEL_FILE_ENV

    memory = KernelMemory(tmp_path / "cpu-format.json")
    monkeypatch.setenv(KERNEL_FILE_ENV, str(memory.path))
    return memory
