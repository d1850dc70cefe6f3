"""Which matrix kernels each kind of the decode loop's forwards runs on, measured here.

A forward of the decode loop is of one `ForwardKind`: a single token (`ONE`: one stream, as
the TUI shows), a few rows that all decode (`FEW`: offered with the fused step) or any other
batch (`MANY`). Each kind runs on the `Kernel` measured fastest for it on this machine and
model (`choose_kernels`, remembered in `cpu_format.kernel_file`):
- `ONEDNN`: torch's default on a CPU;
- `ATEN`: torch's own kernels, oneDNN switched off (the *oneDNN switch*, process-wide);
- `PACKED`, `BF16`: oneDNN on prepacked weights, torch's own on a bf16 copy of fp32 weights,
  both multiplying by copies of the weights (`kernel_weights`, the *weight-copy switch*,
  per thread);
- `FUSED`: the whole step of those rows in one compiled call (`fused_decode`).

The kinds' and kernels' values are what the kernel file stores: they must not change, or
every machine measures again (and older files still read).

Why per kind: a single row is a matrix-vector product, bound by reading the weights, a batch
a matrix product, and different kernels win each (BENCHMARKS.md, "A single stream",
"Prepacked weights", "A single stream on an AVX2-only CPU", "The fused step for many rows").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from typing import Any

from coopcode.engines.embedded import kernel_weights
from coopcode.engines.embedded.cpu_format import (
    OthersLoad,
    remember,
    remembered,
    stands,
    under_load,
)
from coopcode.engines.embedded.kernel_kinds import NEEDS_WEIGHTS, PARTIAL, ForwardKind, Kernel

__all__ = ["NEEDS_WEIGHTS", "PARTIAL", "ForwardKind", "Kernel", "Ranking"]  # the kinds, with the choice


Ranking = dict[ForwardKind, list[Kernel]]  # per kind, its kernels fastest first


def offered(model: Any, dtype_chosen: bool) -> Ranking:
    """The kernels `choose_kernels` may pick from for `model`, per kind of forward: prepacked
    weights where oneDNN can pack this format; for one token the fused step where it runs
    this model, and a bf16 copy where the model runs in a measured fp32 (neither where the
    user asked for fp32, `dtype_chosen`: both multiply by bf16 weights); copies of the weights
    only as far as they fit easily in memory (prepacked first: a batch's speed is what benches
    and training wait on)."""
    import torch

    extra: list[Kernel] = []
    if kernel_weights.can_pack(model.dtype):
        extra.append(Kernel.PACKED)
    if fused_offered(model, dtype_chosen):
        extra.append(Kernel.FUSED)
    if model.dtype == torch.float32 and not dtype_chosen:
        extra.append(Kernel.BF16)
    while extra and not kernel_weights.fits(model, extra):
        extra.pop()
    many = [Kernel.ONEDNN, *([Kernel.PACKED] if Kernel.PACKED in extra else [])]
    few = {ForwardKind.FEW: [*many, Kernel.FUSED]} if Kernel.FUSED in extra else {}
    return {ForwardKind.ONE: [Kernel.ONEDNN, Kernel.ATEN, *extra], **few, ForwardKind.MANY: many}


def fused_offered(model: Any, dtype_chosen: bool) -> bool:
    """Whether the fused step may run `model` here: a supported model, and not where the user
    asked for fp32 (it multiplies by bf16 weights)."""
    import torch

    from coopcode.engines.embedded.fused_decode import unsupported

    return unsupported(model) is None and (model.dtype == torch.bfloat16 or not dtype_chosen)


def measurement_key(model: Any, fingerprint: str, options: Ranking) -> str:
    """What the kernels measured for `model` are remembered under: the CPU, the model and its
    format, and what was offered that changes the timings (a bf16 copy; the fused kernel's
    version, so an edited kernel is measured again)."""
    from coopcode.engines.embedded.cpu_format import cpu_key

    key = f"{cpu_key()} | {fingerprint} | {model.dtype}"
    if Kernel.BF16 in options[ForwardKind.ONE]:
        key += " | bf16 copy"
    if Kernel.FUSED in options[ForwardKind.ONE]:
        from coopcode.engines.embedded import fused_decode

        key += f" | fused {fused_decode.version()}"
    return key


def forward_kind(tokens: int, has_prompt: bool, ranking: Ranking, few_rows: int) -> ForwardKind:
    """The kind of a forward of `tokens` tokens (`has_prompt`: some are a prompt's chunk):
    `FEW` only where it was measured and the fused step takes that many rows."""
    if tokens == 1:
        return ForwardKind.ONE
    if ForwardKind.FEW in ranking and not has_prompt and tokens <= few_rows:
        return ForwardKind.FEW
    return ForwardKind.MANY


def choose_kernels(model: Any, key: str, options: Ranking, make_weights: Callable[[set[Kernel]], Any],
                   reps: int = 3) -> tuple[Ranking, int | None, Any]:
    """The matrix kernels of the decode loop's forwards here, per `ForwardKind`, each from
    `options[kind]`; the kernels that multiply by copies of the weights or run the fused step
    get those made by `make_weights` (`kernel_weights.KernelWeights`). Timed on `model`
    itself (best of `reps` forwards of 1 and 32 tokens, and for "few" of 2, 4, 8, ... rows up
    to the fused step's most: `few_crossover`) and remembered under `key`; measured again by
    a later engine on a quiet machine where this was timed under load (`cpu_format.stands`).

    Returns, per kind, its kernels fastest first down to the first that runs any row (`ranked`:
    a step runs on the first of them that can run its rows); the most rows a "few" step takes
    (`few_crossover`; None where a file written before said nothing: the fused step's most);
    and the `KernelWeights` those use (made only then: they cost memory), or None.

    A single row is a matrix-vector product, bound by reading the weights: on an AMD EPYC
    with native bf16, oneDNN's bf16 path took 17.5 ms for the 0.5B model's vocabulary head
    where torch's own kernel took 7.3, and the whole one-token forward 70 against 41 ms,
    while for 32 rows oneDNN is several times faster (BENCHMARKS.md, "A single stream"); its
    prepacked weights are faster again for a batch (BENCHMARKS.md, "Prepacked weights"); held
    to AVX2, where the model runs in fp32, a bf16 copy reads half the bytes for one row
    (BENCHMARKS.md, "A single stream on an AVX2-only CPU")."""
    import torch

    from coopcode.engines.embedded.fused_decode import MAX_ROWS

    known: Any = remembered(key)
    if _is_ranking(known.get("kernels"), options) and stands(known):
        choice = {kind: [Kernel(w) for w in known["kernels"][kind]] for kind in options}
        used = {w for ways in choice.values() for w in ways} & NEEDS_WEIGHTS
        few_rows = known.get("few_rows")
        return choice, few_rows if isinstance(few_rows, int) else None, \
            make_weights(used) if used else None
    if not torch.backends.mkldnn.is_available():
        return {ForwardKind.ONE: [Kernel.ATEN], ForwardKind.MANY: [Kernel.ONEDNN]}, None, None
    wanted = {w for ways in options.values() for w in ways} & NEEDS_WEIGHTS
    weights = make_weights(wanted) if wanted else None
    most = weights.fused.max_rows if weights is not None and weights.fused is not None else MAX_ROWS

    def timed(kind: ForwardKind, rows: int) -> dict[Kernel, float]:
        ids = torch.zeros(1, rows, dtype=torch.long, device=model.device)
        times = {}
        for way in options[kind]:
            if way in NEEDS_WEIGHTS and (weights is None or way not in weights.ways):
                continue  # a copy that could not be made here
            forward = (partial(weights.fused.scratch_step, rows)
                       if way == Kernel.FUSED and weights is not None
                       else partial(model, input_ids=ids, use_cache=False))
            with on_kernels(way, weights):
                forward()  # kernel selection, first touch
                best = float("inf")
                for _ in range(reps):
                    t0 = time.perf_counter()
                    forward()
                    best = min(best, time.perf_counter() - t0)
            times[way] = best
        return times

    seconds: dict[ForwardKind, dict[Kernel, float]] = {}
    few_seconds: dict[int, dict[Kernel, float]] = {}
    few_rows = None
    with torch.inference_mode(), OthersLoad() as load:
        for kind in options:
            if kind != ForwardKind.FEW:
                seconds[kind] = timed(kind, 1 if kind == ForwardKind.ONE else 32)
                continue
            for rows in few_counts(most):  # up to the first count the fused step loses at
                few_seconds[rows] = timed(kind, rows)
                if _fastest(few_seconds[rows]) != Kernel.FUSED:
                    break
            if most not in few_seconds:
                few_seconds[most] = timed(kind, most)
            few_rows, seconds[kind] = few_crossover(few_seconds)
    choice = {kind: ranked(times) for kind, times in seconds.items()}
    remember(key, {"kernels": choice, "seconds": seconds,
                   **({"few_rows": few_rows, "few_seconds": few_seconds} if few_seconds else {}),
                   **under_load(load)})
    if weights is not None:
        weights.keep({w for ways in choice.values() for w in ways})  # the others' memory goes back
        if not weights.ways:
            weights.remove()
            weights = None
    return choice, few_rows, weights


def few_counts(most: int) -> list[int]:
    """The row counts a "few" step is timed at: 2, 4, 8, ... and `most`."""
    counts, rows = [], 2
    while rows < most:
        counts.append(rows)
        rows *= 2
    return [*counts, most]


def few_crossover(by_rows: dict[int, dict[Kernel, float]]) -> tuple[int, dict[Kernel, float]]:
    """From a "few" step's timings at several row counts: the most rows it takes (the largest
    count up to which the fused step was fastest at every count timed, else the most timed),
    and the timings its kernels are ranked by (those at that count).

    The fused step reads each weight once for all its rows but multiplies on its own
    kernel, so a batch's kernel can overtake it as rows grow: on an AMD EPYC it led up to
    32 rows; on an Intel Xeon with AMX, oneDNN's products on AMX overtook its dot products
    past 4 rows, until the step got AMX products of its own (BENCHMARKS.md, "Few rows on the
    fused step up to where it leads")."""
    rows = 0
    for count in sorted(by_rows):
        if _fastest(by_rows[count]) != Kernel.FUSED:
            break
        rows = count
    rows = rows or max(by_rows)
    return rows, by_rows[rows]


def _fastest(seconds: dict[Kernel, float]) -> Kernel:
    return min(seconds, key=seconds.__getitem__)


def ranked(seconds: dict[Kernel, float]) -> list[Kernel]:
    """Kernels fastest first, down to the first that runs any row (those after it never run)."""
    order = sorted(seconds, key=seconds.__getitem__)
    general = next((i for i, way in enumerate(order) if way not in PARTIAL), len(order) - 1)
    return order[:general + 1]


def _is_ranking(known: Any, options: Ranking) -> bool:
    """Whether `known` (remembered) ranks every kind of `options` from its own ways, each
    ending on one that runs any row (older remembered forms are measured again)."""
    return isinstance(known, dict) and all(
        isinstance(known.get(kind), list) and known[kind]
        and all(way in ways for way in known[kind]) and known[kind][-1] not in PARTIAL
        for kind, ways in options.items())


@contextmanager
def on_kernels(way: str, weights: Any = None) -> Iterator[None]:
    """A context in which this thread's matrix products run on `way`'s kernels: oneDNN
    switched off for torch's own (the oneDNN switch), the weight-copy switch set for a copy."""
    with ExitStack() as stack:
        if way in (Kernel.ATEN, Kernel.BF16):
            stack.enter_context(onednn_switched(False))
        if way in (Kernel.PACKED, Kernel.BF16) and weights is not None and way in weights.ways:
            stack.enter_context(weights.active(way))
        yield


def without_copies(ranking: Ranking) -> Ranking:
    """`ranking` on the weights as stored wherever it chose a copy (what the engine ran
    before it measured those: the benchmarks' reference): oneDNN for prepacked weights,
    torch's own kernels for a bf16 copy."""
    plain = {Kernel.PACKED: Kernel.ONEDNN, Kernel.BF16: Kernel.ATEN}
    return {kind: list(dict.fromkeys(plain.get(w, w) for w in ways)) for kind, ways in ranking.items()}


@contextmanager
def onednn_switched(enabled: bool) -> Iterator[None]:
    """oneDNN (mkldnn) on or off for the matrix products inside.

    Hook "oneDNN switch": a process-wide switch of torch's, not this thread's; a forward in
    another thread meanwhile runs with the same kernels: slower or faster, but the same
    products."""
    import torch

    was = torch._C._get_mkldnn_enabled()
    if was == enabled:
        yield
        return
    torch._C._set_mkldnn_enabled(enabled)
    try:
        yield
    finally:
        torch._C._set_mkldnn_enabled(was)
