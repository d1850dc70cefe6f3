"""What the embedded engine's kernels multiply by beside the model's own weights: copies of
them, in the layout or number format measured fastest for a kind of forward on this machine,
and the fused step (`KernelWeights`).

Two kinds of copy, each of every plain `nn.Linear` of the model (not LoRA's own layers: they
train):
- **"packed"**: the same numbers in oneDNN's own blocked layout. `F.linear` hands the CPU
  library (oneDNN for bf16, MKL for fp32) each weight as stored, row-major, on every call;
  oneDNN can instead be given the weight once, reordered into the layout its kernels read
  best (`torch.ops.mkldnn._reorder_linear_weight`, what torch.compile's CPU "freezing" does),
  and multiply by that (`torch.ops.mkldnn._linear_pointwise`). Measured on the 0.5B model's
  24 decoder layers (BENCHMARKS.md, "Prepacked weights"): bf16 with native bf16, 8 rows 59 ->
  42 ms, 64 rows 154 -> 132 ms; fp32 held to AVX2, 8 rows 181 -> 99 ms, 64 rows 421 -> 290 ms.
  Same arithmetic: the products' results are the plain layout's.
- **"bf16"**: a bf16 copy of an fp32 model's weights, for the forwards of a single row. A
  row's product is a matrix-vector one, bound by reading the weights, so half the bytes is
  up to twice the speed; on an AVX2-only CPU (where fp32 is chosen because it multiplies a
  full batch faster, and bf16 is emulated) the one-token forward of the 0.5B model ran ~2.3x
  faster (BENCHMARKS.md, "A single stream on an AVX2-only CPU"). The row's activations stay
  fp32 (norms, attention, the KV cache): only the product's inputs are rounded to bf16, with
  fp32 accumulation. The 0.5B model's weights are published in bf16, so its copy is exact.

A third kernel, **"fused"**, is not a copy of each layer but the whole one-token step in one
compiled call (`fused_decode.FusedDecoder`, its weights laid out its own way): it multiplies
by a bf16 model's weights as they are, and by the bf16 copy of an fp32 model's (made for it
if not made already).

`KernelWeights(model, kernels)` makes the copies (and the fused step), and turns the layers
into `CopiedLinear` (hook "copied linear": `swap_in_copied_linear`), which multiplies by a
copy only inside `active(way)` on the thread that entered it (hook "weight-copy switch": a
thread-local, `_copy_in_use`): the engine's decode loop. Every other forward (a trainer's,
with gradients; a forward in another thread) runs the plain weights as before. A copy costs
memory (a packed one as much as the weights, a bf16 one of fp32 weights half), so copies are
made only when they fit easily (`fits`), and the engine keeps only those it measured faster.
The base weights must not change while copied: coopcode trains LoRA adapters only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from coopcode.engines.embedded.kernel_kinds import Kernel

WAYS = (Kernel.PACKED, Kernel.BF16, Kernel.FUSED)  # the kernels whose weights are made here
# Hook "weight-copy switch": .way is the copy this thread's forwards multiply by (None: the
# plain weights), set by `KernelWeights.active` and read by every `CopiedLinear`.
_copy_in_use = threading.local()


class CopiedLinear(torch.nn.Linear):
    """An `nn.Linear` that, inside `KernelWeights.active(way)` on this thread, multiplies by
    that copy of its weight."""

    coop_packed: Any = None
    coop_bf16: Any = None
    coop_bf16_bias: Any = None

    def forward(self, x: Any) -> Any:
        way = getattr(_copy_in_use, "way", None)
        if way == "packed" and self.coop_packed is not None and x.dtype == self.weight.dtype:
            return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.coop_packed,
                                                      self.bias, "none", [], "")
        if way == "bf16" and self.coop_bf16 is not None:
            return F.linear(x.to(torch.bfloat16), self.coop_bf16, self.coop_bf16_bias).to(x.dtype)
        return F.linear(x, self.weight, self.bias)


def can_pack(dtype: Any) -> bool:
    """Whether oneDNN can pack weights of `dtype` on this CPU (bf16 needs AVX-512 BW/VL/DQ or
    AVX-NE-CONVERT; held to AVX2 it refuses)."""
    if not torch.backends.mkldnn.is_available() or dtype not in (torch.bfloat16, torch.float32):
        return False
    try:
        torch.ops.mkldnn._reorder_linear_weight(torch.zeros(16, 16, dtype=dtype), 1)
    except RuntimeError:
        return False
    return True


def memory_available() -> int:
    """Bytes the kernel says a new allocation can have (MemAvailable), 0 if unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def plain_linears(model: Any, *, copied: bool = False) -> list[Any]:
    """The model's plain CPU `nn.Linear` layers outside LoRA (whose weights train); with
    `copied`, those already turned into `CopiedLinear` too."""
    kinds = (torch.nn.Linear, CopiedLinear) if copied else (torch.nn.Linear,)
    return [m for name, m in model.named_modules()
            if type(m) in kinds and "lora_" not in name
            and m.weight.device.type == "cpu" and m.weight.dtype in (torch.bfloat16, torch.float32)]


def copy_bytes(model: Any, ways: Iterable[str]) -> int:
    """The memory copies of `ways` of the model's linear weights take (the fused kernel
    shares the bf16 copy of an fp32 model, uses a bf16 model's weights as they are, and where
    the CPU has bf16 dot products packs them in pairs as well, for steps of several rows)."""
    from coopcode.engines.embedded.fused_decode import isa_level

    weights = sum(m.weight.numel() for m in plain_linears(model, copied=True))
    ways = set(ways)
    pairs = 0
    if "fused" in ways:
        ways.discard("fused")
        if model.dtype != torch.bfloat16:
            ways.add("bf16")
        if (isa_level() or 0) >= 2:
            pairs = 2 * weights
    sizes = {"packed": model.dtype.itemsize, "bf16": 2}
    return pairs + sum(weights * sizes[way] for way in ways)


def fits(model: Any, ways: Iterable[str]) -> bool:
    """Copies of `ways` of the model's linear weights fit in half the memory available (ways
    that copy nothing always fit: the fused step on a bf16 model where the CPU has no bf16 dot
    products multiplies by the model's own weights)."""
    need = copy_bytes(model, ways)
    return need == 0 or need <= memory_available() // 2


def swap_in_copied_linear(layers: Iterable[Any]) -> None:
    """Hook "copied linear": each plain `nn.Linear` of `layers` becomes a `CopiedLinear` in
    place (its class swapped, its weights untouched: a trainer holding the model sees the same
    parameters); `KernelWeights.remove` swaps them back."""
    for m in layers:
        m.__class__ = CopiedLinear


class KernelWeights:
    """What kernels `ways` multiply by for `model`: copies of its plain linear weights for
    "packed" (for up to `rows` rows a product) and "bf16", and the fused step for "fused"."""

    def __init__(self, model: Any, ways: Iterable[str], rows: int = 64) -> None:
        self.model = model
        self.layers = plain_linears(model)
        self.ways: set[str] = set()
        self.fused: Any = None  # the fused step (`fused_decode.FusedDecoder`)
        self.unavailable: dict[str, str] = {}  # a kernel whose weights could not be made: why
        swap_in_copied_linear(self.layers)
        self.add(ways, rows)

    def add(self, ways: Iterable[str], rows: int = 64) -> None:
        """Make the copies of `ways` not made yet."""
        new = [w for w in ways if w not in self.ways]
        unknown = set(new) - set(WAYS)
        if unknown:
            raise ValueError(f"no such weight copy: {sorted(unknown)}")
        with torch.inference_mode():
            for m in self.layers:
                w = m.weight.detach()
                if "packed" in new:
                    m.coop_packed = torch.ops.mkldnn._reorder_linear_weight(w, rows)
                if "bf16" in new:
                    m.coop_bf16 = w.to(torch.bfloat16)
                    m.coop_bf16_bias = None if m.bias is None else m.bias.detach().to(torch.bfloat16)
            if "fused" in new:
                from coopcode.engines.embedded.fused_decode import FusedDecoder

                try:  # shares the bf16 copy where one was made
                    self.fused = FusedDecoder(self.model, bf16_copy=lambda m: getattr(m, "coop_bf16", None))
                except RuntimeError as exc:
                    self.unavailable["fused"] = str(exc)
                    new.remove("fused")
        self.ways.update(new)

    @staticmethod
    @contextmanager
    def active(way: str) -> Iterator[None]:
        """Forwards of this thread inside multiply by the `way` copies."""
        was = getattr(_copy_in_use, "way", None)
        _copy_in_use.way = way
        try:
            yield
        finally:
            _copy_in_use.way = was

    def keep(self, ways: Iterable[str]) -> None:
        """Drop every copy but those of `ways` (their memory goes back)."""
        drop = self.ways - set(ways)
        for m in self.layers:
            if "packed" in drop:
                m.coop_packed = None
            if "bf16" in drop:
                m.coop_bf16 = m.coop_bf16_bias = None
        if "fused" in drop:
            self.fused = None
        self.ways -= drop

    def remove(self) -> None:
        """Back to plain layers; every copy's memory goes back."""
        self.keep(())
        for m in self.layers:
            m.__class__ = torch.nn.Linear
            for attr in ("coop_packed", "coop_bf16", "coop_bf16_bias"):
                m.__dict__.pop(attr, None)
        self.layers = []
