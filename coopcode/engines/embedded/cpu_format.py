"""The embedded engine's number format on a CPU, and the file where this machine's
measurements are remembered.

What is fastest depends on the CPU, the kernels torch may use there and torch itself, so it
is measured once per machine and kept in one JSON file (`kernel_file`): the number format
(`measured_cpu_dtype`) under the CPU's key (`cpu_key`), and the kernels of each kind of
forward (`kernels.choose_kernels`) under that key plus the model's. The file lives in
coopcode's cache (`coopcode.core.paths.cache_dir`: $COOPCODE_CACHE, else ~/.cache/coopcode),
or wherever $COOPCODE_KERNEL_FILE says (the tests point it at the user's file, so a test
with an empty cache does not measure again: ~25 s an engine).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from coopcode.core.paths import cache_dir

KERNEL_FILE_ENV = "COOPCODE_KERNEL_FILE"


def kernel_file() -> Path:
    """Where this machine's measured number format and kernels are remembered:
    $COOPCODE_KERNEL_FILE, else `cpu-format.json` in coopcode's cache (`cache_dir()`)."""
    named = os.environ.get(KERNEL_FILE_ENV)
    return Path(named) if named else cache_dir() / "cpu-format.json"


def cpu_has_bf16() -> bool:
    """Whether the CPU has native bf16 instructions and torch may use them
    (`ATEN_CPU_CAPABILITY=avx2` makes an AVX-512 machine run as an AVX2-only one)."""
    import torch

    if not torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


def cpu_key() -> str:
    """What decides which number format is fastest: the CPU, the kernels torch may use, torch."""
    import torch

    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    held = [f"{v}={os.environ[v]}" for v in ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
            if os.environ.get(v)]
    return " | ".join([model, torch.backends.cpu.get_cpu_capability(), f"bf16 {cpu_has_bf16()}",
                       *held, f"torch {torch.__version__}", f"threads {torch.get_num_threads()}"])


BUSY_SHARE = 0.25
"""Other processes' share of this machine's CPUs during a measurement above which it is
remembered as taken under load (`"busy"` in its entry): still used, but measured again by the
first engine that starts on a quiet machine (others below `QUIET_SHARE`). Kernels timed while
something else computes can rank wrongly, and a choice is otherwise kept for good."""
QUIET_SHARE = 0.1


def _cpu_seconds() -> tuple[float, int] | None:
    """CPU seconds every process here has used since boot, and how many CPUs they count over
    (/proc/stat); None where it cannot be read."""
    try:
        lines = Path("/proc/stat").read_text().splitlines()
        ticks = [int(x) for x in lines[0].split()[1:9]]
    except (OSError, IndexError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks + [0] * (8 - len(ticks))
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK"), max(cpus, 1)


class OthersLoad:
    """Other processes' share of this machine's CPUs while the block runs (`share`, 0 to 1):
    every CPU second /proc/stat counts, less this process's own. 0 where /proc/stat cannot
    be read (a measurement there is never flagged)."""

    def __enter__(self) -> OthersLoad:
        self.share = 0.0
        self._start = (_cpu_seconds(), time.process_time(), time.monotonic())
        return self

    def __exit__(self, *exc: object) -> None:
        (before, own0, t0), after = self._start, _cpu_seconds()
        wall = time.monotonic() - t0
        if before is None or after is None or wall <= 0:
            return
        others = (after[0] - before[0]) - (time.process_time() - own0)
        self.share = min(max(others / (wall * after[1]), 0.0), 1.0)


def under_load(load: OthersLoad) -> dict[str, float]:
    """What a measurement's entry says of the load it was taken under: `{"busy": share}`
    where others used more than `BUSY_SHARE` of the CPUs, else nothing."""
    return {"busy": round(load.share, 2)} if load.share > BUSY_SHARE else {}


def stands(entry: dict[str, Any]) -> bool:
    """Whether a remembered measurement stands: taken on a quiet machine, or taken under load
    and the machine still not quiet (`machine_quiet`): measuring again then would be no better."""
    return "busy" not in entry or not machine_quiet()


_quiet_seen: dict[str, tuple[float, bool]] = {}


def machine_quiet(probe: float = 0.3, fresh_for: float = 60.0) -> bool:
    """Whether other processes use under `QUIET_SHARE` of this machine's CPUs, over `probe`
    seconds with this process idle; an answer under `fresh_for` seconds old is reused (a
    process that starts several engines probes once)."""
    seen = _quiet_seen.get("last")
    if seen is not None and time.monotonic() - seen[0] < fresh_for:
        return seen[1]
    with OthersLoad() as load:
        time.sleep(probe)
    _quiet_seen["last"] = (time.monotonic(), load.share < QUIET_SHARE)
    return load.share < QUIET_SHARE


def time_cpu_formats(rows: int = 32, d_in: int = 896, d_out: int = 4864, reps: int = 6) -> dict[str, float]:
    """Seconds for one `rows` x `d_in` by `d_in` x `d_out` product (a 0.5B model's MLP, a
    full batch's rows) in bf16 and in fp32: the best of `reps` rounds of 4."""
    import torch
    import torch.nn.functional as F

    seconds = {}
    with torch.inference_mode():
        for name in ("bfloat16", "float32"):
            dt = getattr(torch, name)
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(rows, d_in, generator=gen).to(dt)
            w = torch.randn(d_out, d_in, generator=gen).to(dt)
            F.linear(x, w)  # kernel selection, first-touch
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(4):
                    F.linear(x, w)
                best = min(best, (time.perf_counter() - t0) / 4)
            seconds[name] = best
    return seconds


def _measured() -> dict[str, Any]:
    """All the kernel file holds ({} if nothing, or the file is unreadable)."""
    try:
        known = json.loads(kernel_file().read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def remembered(key: str) -> dict[str, Any]:
    """What the kernel file holds for `key` ({} if nothing)."""
    entry = _measured().get(key)
    return entry if isinstance(entry, dict) else {}


def remember(key: str, entry: dict[str, Any]) -> None:
    """Store `entry` under `key` in the kernel file (written whole, then renamed; a failure
    only means measuring again next time)."""
    known = _measured()
    known[key] = entry
    path = kernel_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1))
        tmp.replace(path)
    except OSError:
        pass


def measured_cpu_dtype() -> str:
    """The number format the embedded engine runs in on this CPU: bf16 or fp32, whichever
    multiplies a full batch faster here, measured once per machine (and torch, and thread
    count) and remembered in the kernel file (again on a quiet machine if the first measure was
    taken under load: `stands`). A full batch, because benches and training spend
    their time there: on a CPU with native bf16 that is bf16; on an AVX2-only CPU torch
    emulates bf16 and fp32 is faster (BENCHMARKS.md, "Number formats")."""
    key = cpu_key()
    known = remembered(key)
    if known.get("dtype") in ("bfloat16", "float32") and stands(known):
        return str(known["dtype"])
    with OthersLoad() as load:
        seconds = time_cpu_formats()
    choice = "bfloat16" if seconds["bfloat16"] < seconds["float32"] else "float32"
    remember(key, {"dtype": choice, "seconds": seconds, **under_load(load)})
    return choice


def pick_device_and_dtype(device: str | None = None, dtype: str | None = None) -> tuple[str, Any]:
    """The device (CUDA where there is one) and torch dtype a model runs in: `dtype` if given,
    else bf16 (fp16 without bf16) on a GPU and the measured format on a CPU."""
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        if device.startswith("cuda"):
            dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        else:
            dtype = measured_cpu_dtype()
    return device, getattr(torch, dtype)
