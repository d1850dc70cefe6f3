"""Prepacked weights: the embedded engine's matrix products in oneDNN's own weight layout.

`F.linear` hands the CPU library (oneDNN for bf16, MKL for fp32) each weight as it is stored,
row-major, on every call. oneDNN can instead be given the weight once, reordered into the
blocked layout its kernels read best (`torch.ops.mkldnn._reorder_linear_weight`, what
torch.compile's CPU "freezing" does), and multiply by that (`torch.ops.mkldnn._linear_pointwise`).
Measured on the 0.5B model's 24 decoder layers (BENCHMARKS.md, "Prepacked weights"): bf16 with
native bf16, 8 rows 59 -> 42 ms, 64 rows 154 -> 132 ms; fp32 held to AVX2, 8 rows 181 -> 99 ms,
64 rows 421 -> 290 ms. For one row torch's own kernel stays the fastest in bf16.

`PackedWeights(model)` makes that copy of every plain `nn.Linear` of the model (not LoRA's
own layers: they train) and turns the layers into `PackedLinear`, which multiplies by the
packed copy only inside `active()` on the thread that entered it: the engine's decode loop.
Every other forward (a trainer's, with gradients; a forward in another thread) runs the
plain weights as before. The copy costs as much memory as the weights, so it is made only
when it fits easily (`fits`), and the engine keeps it only where it measured faster.
The base weights must not change while packed: coopcode trains LoRA adapters only.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

_state = threading.local()  # .on: this thread's forwards use the packed weights


class PackedLinear(torch.nn.Linear):
    """An `nn.Linear` that, inside `PackedWeights.active()` on this thread, multiplies by a
    prepacked copy of its weight (same arithmetic: oneDNN's product, in another layout)."""

    coop_packed: Any

    def forward(self, x: Any) -> Any:
        if getattr(_state, "on", False) and x.dtype == self.weight.dtype:
            return torch.ops.mkldnn._linear_pointwise(x.contiguous(), self.coop_packed,
                                                      self.bias, "none", [], "")
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


def plain_linears(model: Any) -> list[Any]:
    """The model's plain CPU `nn.Linear` layers outside LoRA (whose weights train)."""
    return [m for name, m in model.named_modules()
            if type(m) is torch.nn.Linear and "lora_" not in name
            and m.weight.device.type == "cpu" and m.weight.dtype in (torch.bfloat16, torch.float32)]


def fits(model: Any) -> bool:
    """A packed copy of the model's linear weights fits in half the memory available."""
    need = sum(m.weight.numel() * m.weight.element_size() for m in plain_linears(model))
    return 0 < need <= memory_available() // 2


class PackedWeights:
    """A packed copy of `model`'s plain linear weights (for up to `rows` rows a product)."""

    def __init__(self, model: Any, rows: int = 64) -> None:
        self.layers = plain_linears(model)
        with torch.inference_mode():
            for m in self.layers:
                m.coop_packed = torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(), rows)
                m.__class__ = PackedLinear

    @staticmethod
    @contextmanager
    def active() -> Iterator[None]:
        """Forwards of this thread inside use the packed weights."""
        was = getattr(_state, "on", False)
        _state.on = True
        try:
            yield
        finally:
            _state.on = was

    def remove(self) -> None:
        """Back to plain layers; the packed copy's memory goes back."""
        for m in self.layers:
            m.__class__ = torch.nn.Linear
            del m.coop_packed
        self.layers = []
