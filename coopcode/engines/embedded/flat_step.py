"""The embedded engine's forward: decode tokens and prompt chunks of many rows in one pass.

One forward of the model takes a flat sequence `[1, T]`: first one token for every row that
decodes, then chunks of prompts being prefilled (vLLM's and Orca's "mixed" batch). Each row's
keys and values live in a *slot* of `SlotCache`, and `slot_attention` (registered with
transformers' `AttentionInterface`) writes and reads them:
- the decoding rows attend together, in one batched SDPA over the slots' cache, each row
  masked to its own length (query heads grouped by key head: no repeated keys);
- each prompt chunk attends alone, causally, to its row's cache so far.

Why not transformers' own continuous batching (`generation/continuous_batching`, 5.23)? Read and
tried (docs/design/engine-flattened-step.md; the whole step: docs/design/embedded-engine.md): on a CPU its attention gathers the whole cache of
every row of the batch and masks it densely (cost quadratic in the batch), it has no per-row
LoRA adapter (and its prefix sharing would give one adapter's cache to another), one global
seed and no stop strings. We keep its idea (a token budget, chunked prefill) and the model's
own forward, and do the rest here.

Adapters: PEFT's own LoRA delta is switched off for the pass and `TokenLora` adds each
adapter's delta to its rows' tokens (PEFT's mixed batches select by batch row; here every
row is in one flat sequence).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

ATTENTION = "coop_slots"  # the name the model's attention is set to
LENGTH_CHUNK = 128  # the cache's length grows by this many tokens


def _round_up(n: int, chunk: int) -> int:
    return -(-n // chunk) * chunk


class SlotCache:
    """Keys and values of every row in flight: per layer `[slots, kv_heads, length, head_dim]`.

    A row takes the lowest free slot, so the slots in use stay packed at the front and the
    decode attention reads a plain view of them. The cache grows (copying what it holds) when
    a row needs more, never past the budget the caller admits rows by (`tokens_after`), and
    is dropped when no row is in flight.
    """

    def __init__(self, layers: int, kv_heads: int, head_dim: int, dtype: Any, device: str) -> None:
        self.layers, self.kv_heads, self.head_dim = layers, kv_heads, head_dim
        self.dtype, self.device = dtype, device
        self.k: list[Any] = []
        self.v: list[Any] = []
        self.slots = 0
        self.length = 0
        self.free: set[int] = set()
        self.used: set[int] = set()

    def tokens_after(self, slots: int, length: int) -> int:
        """Tokens the cache must hold at least to have `slots` slots of `length` each."""
        return max(slots, self.slots) * _round_up(max(length, self.length), LENGTH_CHUNK)

    def take(self, length: int, budget_tokens: int, max_slots: int) -> int:
        """A free slot for a row of up to `length` tokens. The cache grows if it must: its
        slots double (up to `max_slots`, and to what `budget_tokens` holds), so a batch that
        fills copies the cache a few times, not once per row."""
        slot = min(self.free) if self.free else self.slots
        if slot >= self.slots or length > self.length:
            new_length = _round_up(max(length, self.length), LENGTH_CHUNK)
            slots = max(slot + 1, self.slots)
            if slot >= self.slots:
                slots = max(slots, min(2 * self.slots, max_slots, budget_tokens // new_length))
            self._grow(slots, new_length)
        self.free.discard(slot)
        self.used.add(slot)
        return slot

    def release(self, slot: int) -> None:
        self.used.discard(slot)
        self.free.add(slot)

    def copy(self, src: int, dsts: list[int], length: int) -> None:
        """Give slots `dsts` the first `length` positions of slot `src` (a shared prefill)."""
        import torch

        if not dsts:
            return
        idx = torch.tensor(dsts, device=self.device)
        for t in (*self.k, *self.v):
            t[idx, :, :length] = t[src, :, :length]

    def clear(self) -> None:
        """Drop the storage (no row in flight): the memory goes back, the next row regrows it."""
        self.k, self.v = [], []
        self.slots = self.length = 0
        self.free, self.used = set(), set()

    def span(self) -> int:
        """Slots up to the highest one in use (what the decode attention reads)."""
        return max(self.used) + 1 if self.used else 0

    def _grow(self, new_slots: int, new_length: int) -> None:
        import torch

        shape = (new_slots, self.kv_heads, new_length, self.head_dim)
        for store in (self.k, self.v):
            old = list(store) if store else [None] * self.layers
            store.clear()
            for held in old:
                bigger = torch.zeros(shape, dtype=self.dtype, device=self.device)
                if held is not None:
                    bigger[:self.slots, :, :self.length] = held
                store.append(bigger)
        self.free.update(range(self.slots, new_slots))
        self.slots, self.length = new_slots, new_length


@dataclass
class StepPlan:
    """What one flat forward holds: `decode` rows first (one token each), then `chunks`.

    decode_slots[i] and decode_pos[i]: the slot and position of the i-th token;
    chunks: (slot, first position, tokens, offset of the chunk in the flat sequence).
    """

    cache: SlotCache
    decode_slots: list[int] = field(default_factory=list)
    decode_pos: list[int] = field(default_factory=list)
    chunks: list[tuple[int, int, int, int]] = field(default_factory=list)
    _tensors: dict[str, Any] = field(default_factory=dict)

    def decode_tensors(self) -> tuple[Any, Any, Any]:
        """Slots and positions of the decode tokens, and the span's key mask (computed once
        per forward, shared by every layer)."""
        if not self._tensors:
            import torch

            dev = self.cache.device
            slots = torch.tensor(self.decode_slots, device=dev)
            pos = torch.tensor(self.decode_pos, device=dev)
            span = self.cache.span()
            width = max(self.decode_pos) + 1
            length = torch.ones(span, dtype=torch.long, device=dev)  # idle slots: 1 (no NaN)
            length[slots] = pos + 1
            mask = torch.arange(width, device=dev)[None, :] < length[:, None]
            self._tensors = {"slots": slots, "pos": pos, "mask": mask[:, None, None, :]}
        t = self._tensors
        return t["slots"], t["pos"], t["mask"]


def slot_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                   scaling: float | None = None, dropout: float = 0.0, coop_step: Any = None,
                   **kwargs: Any) -> tuple[Any, None]:
    """Attention over `SlotCache` for a flat forward (`coop_step`: its `StepPlan`, handed on
    by transformers from the model's call: hook "step plan"); any other call is plain SDPA."""
    import torch
    import torch.nn.functional as F

    if coop_step is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask,
                                      scaling=scaling, dropout=dropout, **kwargs)
    plan: StepPlan = coop_step
    layer = module.layer_idx
    cache_k, cache_v = plan.cache.k[layer], plan.cache.v[layer]
    heads, kv_heads = query.shape[1], key.shape[1]
    group = heads // kv_heads
    out = torch.empty(query.shape[2], heads, query.shape[3], dtype=query.dtype,
                      device=query.device)  # [T, heads, head_dim]
    n_dec = len(plan.decode_slots)
    if n_dec:
        slots, pos, mask = plan.decode_tensors()
        cache_k[slots, :, pos] = key[0, :, :n_dec].transpose(0, 1)
        cache_v[slots, :, pos] = value[0, :, :n_dec].transpose(0, 1)
        span, width = mask.shape[0], mask.shape[-1]
        # One query token per row: its heads that share a key head become that head's
        # "queries" ([span, kv_heads, group, d]), so keys are read once, not repeated.
        q = query.new_zeros(span, heads, query.shape[3])
        q[slots] = query[0, :, :n_dec].transpose(0, 1)
        o = F.scaled_dot_product_attention(
            q.view(span, kv_heads, group, -1), cache_k[:span, :, :width],
            cache_v[:span, :, :width], attn_mask=mask, scale=scaling)
        out[:n_dec] = o.reshape(span, heads, -1)[slots]
    for slot, start, n, t0 in plan.chunks:
        cache_k[slot, :, start:start + n] = key[0, :, t0:t0 + n]
        cache_v[slot, :, start:start + n] = value[0, :, t0:t0 + n]
        end = start + n
        causal = torch.ones(n, end, dtype=torch.bool, device=query.device).tril(start)
        o = F.scaled_dot_product_attention(
            query[:, :, t0:t0 + n], cache_k[slot:slot + 1, :, :end], cache_v[slot:slot + 1, :, :end],
            attn_mask=causal, scale=scaling, enable_gqa=group > 1)
        out[t0:t0 + n] = o[0].transpose(0, 1)
    return out[None], None


_registered = False


def register_attention() -> None:
    """Make `ATTENTION` a name transformers knows (masks as SDPA's for other calls)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(ATTENTION, slot_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION, sdpa_mask)
    _registered = True


def route_attention_to_slots(model: Any) -> bool:
    """Set `model`'s attention to `slot_attention` (registered as `ATTENTION`); False if the
    model does not use transformers' attention interface.

    Hook "slot attention": every attention layer of the model then calls `slot_attention`;
    a forward given a `StepPlan` as `coop_step=` (hook "step plan", the engine's
    `_flat_forward`) reads and writes the `SlotCache`, any other forward (a trainer's) runs
    plain SDPA."""
    register_attention()
    if model.config._attn_implementation != ATTENTION:
        model.set_attn_implementation(ATTENTION)
    return bool(model.config._attn_implementation == ATTENTION)


class TokenLora:
    """Per-token LoRA deltas on a PEFT model whose own delta is switched off for the pass.

    `rows` maps an adapter name to the flat positions of its tokens (None: all of them); a
    forward hook on each LoRA layer adds `B(A(x)) * scaling` of that adapter to those
    positions (what PEFT adds for a whole batch, in the same dtype and order: base output
    first, then the delta).

    Hook "token LoRA": the forward hooks are set here, on every LoRA layer, and act only in
    a pass inside `peft_off()` on the thread that entered it (the engine's `_flat_logits`).
    """

    def __init__(self, peft_model: Any, names: tuple[str, ...]) -> None:
        from peft.tuners.lora import LoraLayer

        self.peft, self.names = peft_model, names
        self.rows: dict[str, Any] = {}  # set for one pass, by the thread in `thread`
        self.thread = 0
        self.layers: list[Any] = [m for m in peft_model.modules()
                                  if isinstance(m, LoraLayer) and hasattr(m, "lora_A")]
        self.hooks = [m.register_forward_hook(self._add) for m in self.layers]

    @contextmanager
    def peft_off(self) -> Iterator[None]:
        """PEFT's own LoRA delta off for one pass of this thread (each layer as it was
        afterwards). The layers' flag is set directly: PEFT's `enable_adapters` also resets
        every adapter's `requires_grad`, which costs a single-token forward a third of its
        time and is not ours to change (a trainer sets it)."""
        self.thread = threading.get_ident()
        was = [m._disable_adapters for m in self.layers]
        for m in self.layers:
            m._disable_adapters = True
        try:
            yield
        finally:
            for m, off in zip(self.layers, was):
                m._disable_adapters = off

    def _add(self, module: Any, args: tuple[Any, ...], out: Any) -> Any:
        if not self.rows or threading.get_ident() != self.thread:
            return None  # not our pass (a trainer's forward in its own thread, say)
        for name, idx in self.rows.items():
            if name not in module.lora_A:
                if name in getattr(module, "lora_embedding_A", {}):
                    raise ValueError(f"adapter {name!r} has LoRA on an embedding, which the "
                                     "embedded engine's batching does not apply")
                continue
            if module.use_dora.get(name):
                raise ValueError(f"adapter {name!r} uses DoRA, which the embedded engine's "
                                 "batching does not apply")
            a, b = module.lora_A[name], module.lora_B[name]
            if idx is None:  # every token of the pass: PEFT's own arithmetic, no gather
                delta = b(a(args[0].to(a.weight.dtype))) * module.scaling[name]
                out = (out + delta).to(out.dtype)
                continue
            x, flat = args[0][0], out[0]
            delta = b(a(x.index_select(0, idx).to(a.weight.dtype))) * module.scaling[name]
            # As PEFT adds it: in the wider of the two dtypes, then rounded to the output's.
            flat.index_copy_(0, idx, (flat.index_select(0, idx) + delta).to(flat.dtype))
        return out

    def remove(self) -> None:
        for h in self.hooks:
            h.remove()
        self.hooks = []
