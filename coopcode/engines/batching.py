"""Continuous batching for the embedded engine: requests join and leave between decode steps.

Iteration-level scheduling as in Orca and vLLM, in their vocabulary: a *waiting* queue of
sample rows and a *running* batch. Each iteration of the loop
1. admits waiting rows while the running batch has room (`max_batch` rows, and a KV budget
   that counts the padded cache every row could grow to), and prefills them: each distinct
   (prompt, adapter) once, its KV cache copied to its rows, then merged into the running
   batch's cache (left padding keeps every row's last token in the last column);
2. samples one token for every running row, each from its own generator (seeded from the
   request's seed and the sample index, so its random draws never depend on its batch);
3. lets rows that finished (EOS, stop string, budget, cancel) leave the batch at once, and
   completes a request when its last row has finished;
4. runs one decode step for the rest, helper, main and bare-base rows together (PEFT's
   mixed-adapter forward), and drops cache columns that are padding for every row left.

No preemption: a row is admitted only when the cache it could grow to fits, so it never has
to be evicted. `max_batch=1` generates every sample alone (see `deterministic`).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from coopcode.engines.base import Completion, Submission, derive_seed
from coopcode.engines.stops import find_stop, safe_length, stop_search_start

TOP_K_PREFILTER = 256  # nucleus sampling looks here first; falls back to a full sort if short
BASE = "__base__"  # PEFT's name for "no adapter" in a mixed-adapter batch


def _nucleus(probs: Any, top_p: Any) -> Any:
    """`probs` (sorted, descending) with 0 past the first token that brings the sum to top_p."""
    import torch

    return probs * ((torch.cumsum(probs, dim=-1) - probs) < top_p)


class Row:
    """One sample being generated: its settings, its generator, its text so far.

    It also streams: after each token it decodes the row's text and reports the delta,
    holding back text that could be the start of a stop string so a stream never shows one.
    """

    def __init__(self, sub: Submission, sample: int, prompt_ids: list[int], tokenizer: Any,
                 eos_ids: set[int]) -> None:
        import torch

        p = sub.request.params
        self.sub, self.sample, self.prompt_ids = sub, sample, prompt_ids
        self.adapter = sub.request.adapter
        self.tok, self.eos_ids = tokenizer, eos_ids
        self.temperature, self.top_p = p.temperature, p.top_p
        self.stops, self.budget = p.stop, p.max_new_tokens
        self.generator = torch.Generator().manual_seed(derive_seed(p.seed, p.index + sample))
        self.ids: list[int] = []
        self.text = ""
        self.emitted = 0  # characters of text streamed
        self.counted = 0  # tokens streamed
        self.reason = "length"
        self.done = False
        self.started = 0.0
        self.seconds = 0.0

    @property
    def key(self) -> tuple[tuple[int, ...], str | None]:
        """Rows with the same key share one prefill."""
        return tuple(self.prompt_ids), self.adapter

    def max_len(self) -> int:
        return len(self.prompt_ids) + self.budget

    def push(self, token: int) -> bool:
        """Append `token`; True when the row is finished."""
        self.ids.append(token)
        hit_eos = token in self.eos_ids
        text = self.tok.decode(self.ids[:-1] if hit_eos else self.ids, skip_special_tokens=True)
        self.text = text
        cut = self._stop_at(text)
        if cut is not None:
            self.text = text[:cut]
            self.finish("stop")
        elif hit_eos:
            self.finish("stop")
        elif len(self.ids) >= self.budget:
            self.finish("length")
        else:
            self._emit(final=False)
        return self.done

    def _stop_at(self, text: str) -> int | None:
        return find_stop(text, self.stops, stop_search_start(self.emitted, self.stops))

    def _emit(self, final: bool) -> None:
        text = self.text
        safe = len(text) if final else safe_length(text, self.stops)
        tokens = len(self.ids) - self.counted
        if safe > self.emitted or (final and tokens > 0):
            delta = text[self.emitted:safe]
            self.emitted, self.counted = safe, len(self.ids)
            if self.sub.on_delta is not None:
                self.sub.on_delta(self.sample, delta, tokens)

    def finish(self, reason: str) -> None:
        self.done = True
        self.reason = reason
        self.seconds = time.time() - self.started if self.started else 0.0
        self._emit(final=True)

    def completion(self) -> Completion:
        return Completion(text=self.text, n_tokens=len(self.ids), finish_reason=self.reason,
                          token_ids=list(self.ids), seconds=self.seconds)


def pick_tokens(logits: Any, rows: list[Row]) -> list[int]:
    """Next token of each row, given their logits [len(rows), V].

    The distribution work (temperature, log-normalizer, top-k prefilter, nucleus cut) is
    done for the whole batch at once; only the draw is per row, from the row's generator.
    """
    import torch

    logits = logits.float().cpu()
    chosen = logits.argmax(dim=-1).tolist()
    temps = torch.tensor([r.temperature for r in rows], dtype=torch.float32)
    top_ps = torch.tensor([r.top_p for r in rows], dtype=torch.float32)
    hot = (temps > 0).nonzero().flatten()
    if hot.numel() == 0:
        return chosen
    scaled = logits[hot] / temps[hot, None]
    log_z = torch.logsumexp(scaled, dim=-1, keepdim=True)
    k = min(TOP_K_PREFILTER, scaled.shape[-1])
    vals, idx = torch.topk(scaled, k, dim=-1)
    probs = torch.exp(vals - log_z)
    nucleus = top_ps[hot] < 1.0
    probs_cut = torch.where(nucleus[:, None], _nucleus(probs, top_ps[hot, None]), probs)
    short = nucleus & (probs.sum(dim=-1) < top_ps[hot])
    for j, i in enumerate(hot.tolist()):
        gen = rows[i].generator
        if not bool(nucleus[j]) and k < scaled.shape[-1]:  # no nucleus: the whole vocabulary
            p = torch.softmax(scaled[j], dim=0)
            chosen[i] = int(torch.multinomial(p, 1, generator=gen))
        elif bool(short[j]):  # rare: a distribution too flat for the prefilter
            v, ids = torch.sort(scaled[j], descending=True)
            p = _nucleus(torch.exp(v - log_z[j]), top_ps[hot[j]])
            chosen[i] = int(ids[torch.multinomial(p / p.sum(), 1, generator=gen)])
        else:
            p = probs_cut[j]
            chosen[i] = int(idx[j, torch.multinomial(p / p.sum(), 1, generator=gen)])
    return chosen


class Running:
    """The running batch: its rows, KV cache, attention mask and next-token logits."""

    def __init__(self, rows: list[Row], cache: Any, mask: Any, logits: Any) -> None:
        self.rows, self.cache, self.mask, self.logits = rows, cache, mask, logits

    def keep(self, idx: list[int]) -> None:
        import torch

        if len(idx) == len(self.rows):
            return
        sel = torch.tensor(idx, device=self.mask.device)
        self.cache.batch_select_indices(sel)
        self.rows = [self.rows[i] for i in idx]
        self.mask, self.logits = self.mask[sel], self.logits[sel]
        self.trim()

    def trim(self) -> None:
        """Drop leading cache columns that are padding for every row."""
        used = self.mask.sum(0) > 0
        first = int(used.nonzero()[0]) if bool(used.any()) else 0
        if first > 0:
            self.mask = self.mask[:, first:]
            for layer in self.cache.layers:
                layer.keys = layer.keys[:, :, first:]
                layer.values = layer.values[:, :, first:]

    def merge(self, other: Running) -> None:
        """Append `other`'s rows, left-padding whichever cache is shorter."""
        import torch
        import torch.nn.functional as F

        width = max(self.mask.shape[1], other.mask.shape[1])

        def pad(t: Any, dim_from_end: int) -> Any:
            short = width - t.shape[-dim_from_end]
            if short == 0:
                return t
            spec = [0, 0] * (dim_from_end - 1) + [short, 0]
            return F.pad(t, spec)

        for mine, theirs in zip(self.cache.layers, other.cache.layers):
            mine.keys = torch.cat([pad(mine.keys, 2), pad(theirs.keys, 2)])
            mine.values = torch.cat([pad(mine.values, 2), pad(theirs.values, 2)])
        self.mask = torch.cat([pad(self.mask, 1), pad(other.mask, 1)])
        self.logits = torch.cat([self.logits, other.logits])
        self.rows = self.rows + other.rows


class ContinuousBatcher:
    """The decode loop of one model, on its own thread; `submit` queues a request's rows."""

    def __init__(
        self,
        forward: Callable[..., Any],
        encode: Callable[[str], list[int]],
        tokenizer: Any,
        eos_ids: set[int],
        lock: Any,
        *,
        max_batch: int,
        kv_budget_tokens: int,
        pad_id: int,
        device: str,
    ) -> None:
        self.forward, self.encode, self.tok, self.eos_ids = forward, encode, tokenizer, eos_ids
        self.lock = lock  # the engine's: adapters do not change under a step
        self.max_batch, self.kv_budget_tokens = max_batch, kv_budget_tokens
        self.pad_id, self.device = pad_id, device
        self.waiting: deque[Row] = deque()
        self.running: Running | None = None
        self.left: dict[Submission, int] = {}  # rows of a request not finished yet
        self.rows_of: dict[Submission, list[Row]] = {}
        self.cv = threading.Condition()
        self.closed = False
        self.steps = 0  # decode steps so far (for tests and benchmarks)
        self.thread = threading.Thread(target=self._loop, name="coopcode-decode", daemon=True)
        self.thread.start()

    def submit(self, subs: list[Submission]) -> None:
        """Queue the rows of these requests together (they may share their first batch)."""
        queued = []
        for sub in subs:
            n = sub.request.params.n
            if n < 1:
                sub.future.set_result([])
                continue
            ids = self.encode(sub.request.prompt)
            queued.append((sub, [Row(sub, i, ids, self.tok, self.eos_ids) for i in range(n)]))
        with self.cv:
            if self.closed:
                raise RuntimeError("the engine is closed")
            for sub, rows in queued:
                self.rows_of[sub], self.left[sub] = rows, len(rows)
                self.waiting.extend(rows)
            self.cv.notify()

    def close(self) -> None:
        with self.cv:
            self.closed = True
            self.cv.notify()
        self.thread.join(timeout=30)

    # -- the loop -------------------------------------------------------------------------

    def _loop(self) -> None:
        import torch

        while True:
            with self.cv:
                while not self.closed and not self.waiting and self.running is None:
                    self.cv.wait()
                if self.closed:
                    self._fail_all(RuntimeError("the engine was closed"))
                    return
                joining = self._admit()
            try:
                with self.lock, torch.inference_mode():
                    self._step(joining)
            except BaseException as e:  # noqa: BLE001 - every waiter hears of it
                self.running = None
                self._fail_all(e)

    def _admit(self) -> list[Row]:
        """Waiting rows that fit now (cancelled ones finish without a forward)."""
        rows = list(self.running.rows) if self.running is not None else []
        joining: list[Row] = []
        while self.waiting:
            row = self.waiting[0]
            if row.sub.cancelled.is_set():
                self.waiting.popleft()
                row.finish("cancelled")
                self._row_done(row)
                continue
            both = rows + joining + [row]
            if len(both) > self.max_batch:
                break
            if both != [row] and len(both) * max(r.max_len() for r in both) > self.kv_budget_tokens:
                break  # a lone row is always admitted: it cannot wait for a smaller batch
            joining.append(self.waiting.popleft())
        return joining

    def _step(self, joining: list[Row]) -> None:
        if joining:
            new = self._prefill(joining)
            if self.running is None:
                self.running = new
            else:
                self.running.merge(new)
        run = self.running
        if run is None:
            return
        tokens = pick_tokens(run.logits, run.rows)
        keep = []
        for i, (row, token) in enumerate(zip(run.rows, tokens)):
            if row.sub.cancelled.is_set():
                row.finish("cancelled")
            elif not row.push(token):
                keep.append(i)
                continue
            self._row_done(row)
        tokens = [tokens[i] for i in keep]
        if not keep:
            self.running = None
            return
        run.keep(keep)
        import torch

        run.mask = torch.cat([run.mask, run.mask.new_ones((len(run.rows), 1))], dim=1)
        out = self.forward([r.adapter for r in run.rows],
                           input_ids=torch.tensor(tokens, device=self.device)[:, None],
                           attention_mask=run.mask,
                           position_ids=run.mask.sum(-1, keepdim=True) - 1,
                           past_key_values=run.cache, use_cache=True)
        run.cache, run.logits = out.past_key_values, out.logits[:, -1]
        self.steps += 1

    def _prefill(self, rows: list[Row]) -> Running:
        """Each distinct (prompt, adapter) once; its cache copied to its rows."""
        import torch

        now = time.time()
        for r in rows:
            r.started = now
        keys = list(dict.fromkeys(r.key for r in rows))
        width = max(len(k[0]) for k in keys)
        ids = torch.full((len(keys), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(keys), width), dtype=torch.long)
        for i, (prompt, _adapter) in enumerate(keys):
            ids[i, width - len(prompt):] = torch.tensor(prompt)
            mask[i, width - len(prompt):] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        out = self.forward([k[1] for k in keys], input_ids=ids, attention_mask=mask,
                           position_ids=(mask.cumsum(-1) - 1).clamp(min=0), use_cache=True,
                           logits_to_keep=1)
        cache = out.past_key_values
        which = [keys.index(r.key) for r in rows]
        sel = torch.tensor(which, device=self.device)
        if which != list(range(len(keys))):
            cache.batch_select_indices(sel)
        return Running(rows, cache, mask[sel], out.logits[sel, -1])

    def _row_done(self, row: Row) -> None:
        sub = row.sub
        with self.cv:
            if sub not in self.left:
                return
            self.left[sub] -= 1
            if self.left[sub] > 0:
                return
            rows = self.rows_of.pop(sub)
            del self.left[sub]
        if not sub.future.done():
            sub.future.set_result([r.completion() for r in rows])

    def _fail_all(self, error: BaseException) -> None:
        with self.cv:
            subs = list(self.rows_of)
            self.waiting.clear()
            self.rows_of.clear()
            self.left.clear()
        for sub in subs:
            if not sub.future.done():
                sub.future.set_exception(error)
