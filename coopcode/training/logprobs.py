"""Log-probabilities of sampled completions under the current policy, batched.

The reference implementation runs one forward per completion over prompt + completion and
takes a full-vocabulary log-softmax at every position. Three things make ours cheaper, for
the same numbers:

1. Siblings share their prompt (the helper's G samples have one prompt; the main agent's
   sequential prompts differ only after the problem text). The common prefix runs once and
   its key/value cache is repeated over the group; gradients flow back through it once.
2. The rest (prompt suffixes + completions) runs as one right-padded batch. Right padding
   keeps every row's positions 0..n, exactly as in an unpadded forward.
3. The LM head (vocab x hidden, ~27% of a 0.5B model's FLOPs per token) runs only where a
   completion token is predicted, in chunks, through a custom autograd function that makes
   as few passes over the [tokens x 151k] logits as it can (see `_HeadLogprob`).

Log-probs are taken at the sampling temperature (logits / T): that is the distribution the
engine sampled from (up to top-p truncation), as in TRL's GRPO.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedModel

MIN_SHARED_PREFIX = 16  # below this, splitting off a prefix costs more than it saves
HEAD_CHUNK = 256  # completion tokens per LM-head chunk: 256 x 151k fp32 log-probs ~ 155 MB
ENTROPY_STRIDE = 8  # the entropy metric samples every 8th token: a full pass costs ~10%


@dataclass
class TokenLogprobs:
    """Per-token log-probs of a batch of completions, right-padded."""

    values: torch.Tensor  # (B, L) log pi(token); 0 where mask is False
    mask: torch.Tensor  # (B, L) True on completion tokens
    entropy: torch.Tensor  # (B, L) policy entropy where measured (no grad), NaN elsewhere

    def reduce(self, how: str = "sum") -> torch.Tensor:
        """log pi(a|h) per completion: the sum over its tokens, or their mean."""
        total = (self.values * self.mask).sum(dim=1)
        if how == "mean":
            return total / self.mask.sum(dim=1).clamp(min=1)
        return total


def common_prefix_len(seqs: Sequence[Sequence[int]]) -> int:
    if not seqs:
        return 0
    first = seqs[0]
    n = min(len(s) for s in seqs)
    for i in range(n):
        t = first[i]
        if any(s[i] != t for s in seqs):
            return i
    return n


class _HeadLogprob(torch.autograd.Function):
    """log softmax(h W^T / T)[target] for N hidden states, W frozen, in chunks.

    Passes over the N x vocab logits cost more than the matmul here, so there are few: the
    temperature scales h (N x hidden) instead of the logits; the softmax reads the
    model-dtype logits and accumulates in fp32 in one kernel; backward reuses the logits
    kept in the model dtype (N x vocab x 2 bytes) instead of recomputing them; and the
    entropy, a metric, is measured on every ENTROPY_STRIDE-th token only (NaN elsewhere).
    d/dlogits = onehot(target) - softmax, times the incoming gradient.
    """

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor,
                inv_temp: float, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = hidden.shape[0]
        acc = torch.promote_types(hidden.dtype, torch.float32)  # softmax in >= fp32
        h = (hidden.to(acc) * inv_temp).to(weight.dtype)
        out = hidden.new_empty(n, dtype=acc)
        ent = torch.full((n,), float("nan"), dtype=acc, device=hidden.device)
        kept = []
        for s in range(0, n, chunk):
            logits = h[s:s + chunk] @ weight.T
            logp = torch.log_softmax(logits, dim=-1, dtype=acc)
            out[s:s + chunk] = logp.gather(1, targets[s:s + chunk, None]).squeeze(1)
            some = logp[::ENTROPY_STRIDE]
            ent[s:s + chunk:ENTROPY_STRIDE] = -(some.exp() * some).sum(dim=-1)
            kept.append(logits)
        ctx.save_for_backward(weight, targets)
        ctx.logits, ctx.inv_temp, ctx.chunk = kept, inv_temp, chunk
        ctx.hidden_dtype, ctx.acc = hidden.dtype, acc
        ctx.mark_non_differentiable(ent)
        return out, ent

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor, _grad_ent: torch.Tensor) -> tuple[Any, ...]:
        weight, targets = ctx.saved_tensors
        parts = []
        for i, logits in enumerate(ctx.logits):
            s = i * ctx.chunk
            g = grad_out[s:s + logits.shape[0]].to(ctx.acc)
            d = torch.softmax(logits, dim=-1, dtype=ctx.acc).mul_(-g[:, None])
            d.scatter_add_(1, targets[s:s + logits.shape[0], None], g[:, None])
            parts.append(((d.to(weight.dtype) @ weight) * ctx.inv_temp).to(ctx.hidden_dtype))
        return torch.cat(parts), None, None, None, None


def _head_logprobs(head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor,
                   temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    weight = getattr(head, "weight", None)
    plain = isinstance(head, torch.nn.Linear) and head.bias is None and not weight.requires_grad
    if plain:
        return _HeadLogprob.apply(hidden, weight, targets, 1.0 / temperature, HEAD_CHUNK)
    # An adapted or biased head: plain autograd (keeps the logits; fine for small batches).
    logits = head(hidden).float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    ent = -(logp.exp() * logp).sum(-1).detach()
    return logp.gather(1, targets[:, None]).squeeze(1), ent


def completion_logprobs(
    model: PreTrainedModel,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    share_prefix: bool = True,
) -> TokenLogprobs:
    """Token log-probs of `completions[b]` after `prompts[b]` under `model` (a causal LM).

    Differentiable with respect to the model's trainable (LoRA) weights when grad is enabled.
    """
    device = next(model.parameters()).device
    b = len(prompts)
    lengths = [len(c) for c in completions]
    width = max(lengths, default=0)
    if b == 0 or width == 0:
        z = torch.zeros(b, width, device=device)
        return TokenLogprobs(z, z.bool(), z)
    decoder, head = model.get_decoder(), model.get_output_embeddings()

    # Every row keeps >= 1 prompt token in its suffix: the first completion token is predicted
    # from the last prompt position, which must be in the batched forward.
    shared = min(common_prefix_len(prompts), min(len(p) for p in prompts) - 1) if share_prefix else 0
    if shared < MIN_SHARED_PREFIX or b == 1:
        shared = 0
    cache = None
    if shared:
        prefix = torch.tensor([list(prompts[0][:shared])], device=device)
        cache = decoder(input_ids=prefix, use_cache=True).past_key_values
        cache.batch_repeat_interleave(b)

    suffixes = [list(p[shared:]) + list(c[:-1]) for p, c in zip(prompts, completions)]
    s_len = max(len(s) for s in suffixes)
    ids = torch.zeros(b, s_len, dtype=torch.long, device=device)
    attn = torch.zeros(b, shared + s_len, dtype=torch.long, device=device)
    attn[:, :shared] = 1
    for i, s in enumerate(suffixes):
        ids[i, :len(s)] = torch.tensor(s, device=device)
        attn[i, shared:shared + len(s)] = 1
    positions = torch.arange(shared, shared + s_len, device=device).unsqueeze(0).expand(b, -1)
    hidden = decoder(input_ids=ids, attention_mask=attn, position_ids=positions,
                     past_key_values=cache, use_cache=cache is not None).last_hidden_state

    # Position t predicts token t+1: completion token k of row i is predicted at
    # len(prompt_i) - 1 + k, i.e. at that minus `shared` in the suffix.
    rows: list[int] = []
    cols: list[int] = []
    targets: list[int] = []
    for i, (p, c) in enumerate(zip(prompts, completions)):
        start = len(p) - 1 - shared
        rows.extend([i] * len(c))
        cols.extend(range(start, start + len(c)))
        targets.extend(c)
    r = torch.tensor(rows, device=device)
    k = torch.tensor(cols, device=device)
    logp, ent = _head_logprobs(head, hidden[r, k], torch.tensor(targets, device=device), temperature)

    within = torch.cat([torch.arange(n, device=device) for n in lengths])
    values = torch.zeros(b, width, device=device, dtype=logp.dtype).index_put((r, within), logp)
    entropy = torch.full((b, width), float("nan"), device=device).index_put((r, within), ent.float())
    mask = torch.zeros(b, width, dtype=torch.bool, device=device)
    mask[r, within] = True
    return TokenLogprobs(values, mask, entropy)


def per_completion_logprobs(model: PreTrainedModel, prompts: Sequence[Sequence[int]],
                            completions: Sequence[Sequence[int]], *,
                            temperature: float = 1.0) -> list[torch.Tensor]:
    """One plain forward per completion (the reference's approach): the oracle for tests."""
    device = next(model.parameters()).device
    out = []
    for p, c in zip(prompts, completions):
        ids = torch.tensor([list(p) + list(c[:-1])], device=device)
        logits = model(input_ids=ids).logits[0, len(p) - 1:].float() / temperature
        logp = torch.log_softmax(logits, dim=-1)
        out.append(logp.gather(1, torch.tensor(c, device=device)[:, None]).squeeze(1))
    return out
