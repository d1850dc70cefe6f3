"""The kinds of forward of the embedded engine's decode loop and the kernels each may run on,
as types (`coopcode.engines.embedded.kernels` chooses among them; `kernel_weights` makes the
weights some of them multiply by). Their values are what the kernel file stores: they must not
change, or every machine measures again (and older files still read)."""

from __future__ import annotations

from enum import StrEnum


class _Stored(StrEnum):
    """A name kept in the kernel file: it is that string (equal, hashed and written alike),
    and prints as it (a ranking printed by a benchmark reads as before)."""

    __repr__ = str.__repr__


class ForwardKind(_Stored):
    """A kind of forward of the decode loop, each with kernels of its own."""

    ONE = "one"  # a single token: one stream
    FEW = "few"  # 2 to `FusedDecoder.max_rows` rows that each decode a token, no prompt
    MANY = "many"  # any other batch


class Kernel(_Stored):
    """The matrix kernels a forward may run on (`choose_kernels`)."""

    ONEDNN = "onednn"  # torch's default on a CPU
    ATEN = "aten"  # torch's own, oneDNN switched off
    PACKED = "packed"  # oneDNN on prepacked copies of the weights
    BF16 = "bf16"  # torch's own on a bf16 copy of fp32 weights
    FUSED = "fused"  # the whole step in one compiled call (`fused_decode`)


# The kernels that need `KernelWeights` made for them (copies of the weights, or the fused step).
NEEDS_WEIGHTS = frozenset({Kernel.PACKED, Kernel.BF16, Kernel.FUSED})
# The one kernel that does not run every row: the fused step refuses rows under an adapter it
# cannot apply (`FusedDecoder.runs`).
PARTIAL = frozenset({Kernel.FUSED})
