"""The vLLM CPU build in `.venv-vllm/` (make test builds it), and `vllm serve` on loopback.

Where that environment could not be built, tests that need it skip with the reason
scripts/setup_vllm.sh wrote, never silently.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from coopcode.engines.served.vllm_server import VLLMServer as _Server
from coopcode.engines.served.vllm_server import free_port

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".venv-vllm"
PYTHON = VENV / "bin" / "python"
DEMO = REPO / "checkpoints" / "magrpo-0.5b-demo"
SERVED = "qwen2.5-coder-0.5b-instruct"


def vllm_python_or_skip() -> Path:
    failed = REPO / ".venv-vllm.failed"
    if failed.exists():
        pytest.skip(f"the vLLM environment could not be built: {failed.read_text().strip()}")
    if not (VENV / ".coopcode-vllm-installed").exists():
        pytest.skip("the vLLM environment is not built (make test builds it: scripts/setup_vllm.sh)")
    return PYTHON


def vllm_env() -> dict[str, str]:
    from coopcode.engines.served.vllm_server import vllm_env as env

    return env(VENV)


class VLLMServer(_Server):
    """`vllm serve` of the embedded model with the committed pair as two LoRA modules, and
    room for a trainer's two adapters loaded at run time (one server for every test that
    needs one: the engine's, the bench's and the remote rollouts'; starting one takes ~45 s)."""

    def __init__(self, model_dir: Path, log: Path) -> None:
        vllm_python_or_skip()
        super().__init__(model_dir, SERVED, log, venv=VENV, runtime_lora=2, max_lora_rank=8,
                         lora_modules={"helper": DEMO / "helper", "main": DEMO / "main"})


class FaultProxy:
    """tests/fault_proxy.py as a process in front of a server (so it can really be killed)."""

    def __init__(self, target: str, port: int | None = None) -> None:
        self.port = port or free_port()
        self.target = target
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "fault_proxy.py"), "--target", self.target,
             "--port", str(self.port)], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def fail_next(self, *codes: int) -> None:
        import httpx2 as httpx

        httpx.post(f"http://127.0.0.1:{self.port}/__fail", json={"codes": list(codes)}, timeout=5)

    def stats(self) -> dict[str, int]:
        import httpx2 as httpx

        return dict(httpx.get(f"http://127.0.0.1:{self.port}/__stats", timeout=5).json())

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
