"""Start and stop `vllm serve` (the CPU build in `.venv-vllm`) on 127.0.0.1: for the tests and
the benchmarks that put the OpenAI-compatible engine in front of a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from coopcode.engines.embedded.cpu_format import measured_cpu_dtype
from coopcode.engines.served import vllm_launch
from coopcode.engines.served.vllm_launch import SAFE_SERVE_ARGS, cpu_env, lora_slots

REPO = Path(__file__).resolve().parents[3]  # coopcode/engines/served/ -> the checkout
VLLM_VENV = REPO / ".venv-vllm"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vllm_env(venv: Path = VLLM_VENV, kv_cache_gb: int = 2) -> dict[str, str]:
    """os.environ plus vLLM's CPU settings (the launcher's), with the venv's OpenMP preloaded."""
    env = {**os.environ, **cpu_env(kv_cache_gb)}
    preload = [p for p in env.get("LD_PRELOAD", "").split(":") if p]
    iomp = venv / "lib" / "libiomp5.so"
    if iomp.exists() and str(iomp) not in preload:
        preload.append(str(iomp))
    env["LD_PRELOAD"] = ":".join(preload)
    env.pop("OMP_WAIT_POLICY", None)  # coopcode's setting for torch; vLLM binds its own threads
    return env


class VLLMServer:
    """`vllm serve MODEL` with LoRA modules by name, on a free loopback port."""

    def __init__(self, model_dir: Path, served_name: str, log: Path, *,
                 lora_modules: Mapping[str, Path] | None = None, max_lora_rank: int = 8,
                 max_model_len: int = 4096, kv_cache_gb: int = 2, venv: Path = VLLM_VENV,
                 runtime_lora: int = 0, dtype: str | None = None) -> None:
        """`runtime_lora`: adapters that will be loaded while it runs (a trainer's, through
        /v1/load_lora_adapter); slots are kept for them and for a new version beside each.
        `dtype`: bfloat16 or float32 (default: the embedded engine's choice, measured on this
        CPU: bf16 only where the CPU multiplies it natively; an AVX2-only CPU emulates it, and
        a batch in bf16 took 3.5x as long there: benchmarks/vllm_dtype.py)."""
        self.dtype = dtype or measured_cpu_dtype()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        argv = [str(venv / "bin" / "python"), str(Path(vllm_launch.__file__).resolve()),
                "serve", str(model_dir), "--served-model-name", served_name, "--host", "127.0.0.1",
                "--port", str(self.port), "--dtype", self.dtype, "--max-model-len",
                str(max_model_len), "--seed", "0", *SAFE_SERVE_ARGS]
        adapters = len(lora_modules or {}) + 2 * runtime_lora
        if adapters:
            argv += ["--enable-lora", "--max-loras", str(lora_slots(adapters)),
                     "--max-lora-rank", str(max_lora_rank)]
        if lora_modules:
            argv += ["--lora-modules", *[f"{name}={path}" for name, path in lora_modules.items()]]
        env = vllm_env(venv, kv_cache_gb)
        if runtime_lora:
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        self.log = log
        self.proc = subprocess.Popen(argv, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)

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
        raise RuntimeError(f"vllm serve was not ready in {timeout:.0f} s (log: {self.log})")

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
