"""The vLLM CPU build in `.venv-vllm/` (make test builds it), and `vllm serve` on loopback.

Where that environment could not be built, tests that need it skip with the reason
scripts/setup_vllm.sh wrote, never silently.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vllm_env() -> dict[str, str]:
    """os.environ plus vLLM's CPU settings, as the launcher documents them."""
    sys.path.insert(0, str(REPO))
    from coopcode.engines.vllm_launch import cpu_env

    env = {**os.environ, **cpu_env(kv_cache_gb=2)}
    preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p]
    iomp = VENV / "lib" / "libiomp5.so"
    if iomp.exists() and str(iomp) not in preload:
        preload.append(str(iomp))
    env["LD_PRELOAD"] = ":".join(preload)
    env.pop("OMP_WAIT_POLICY", None)
    return env


class VLLMServer:
    """`vllm serve` of the embedded model with the committed pair as two LoRA modules."""

    def __init__(self, model_dir: Path, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        argv = [str(vllm_python_or_skip()), str(REPO / "coopcode" / "engines" / "vllm_launch.py"),
                "serve", str(model_dir), "--served-model-name", SERVED,
                "--host", "127.0.0.1", "--port", str(self.port), "--dtype", "bfloat16",
                "--max-model-len", "4096", "--enable-lora", "--max-loras", "3",
                "--max-lora-rank", "8", "--lora-modules", f"helper={DEMO / 'helper'}",
                f"main={DEMO / 'main'}", "--max-num-batched-tokens", "16384", "--seed", "0"]
        self.log = log
        self.proc = subprocess.Popen(argv, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                     env=vllm_env(), start_new_session=True)

    def wait_ready(self, timeout: float = 600) -> None:
        import httpx2 as httpx

        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"vllm serve exited with {self.proc.returncode}:\n{tail}")
            try:
                if httpx.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise RuntimeError(f"vllm serve was not ready in {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()


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
