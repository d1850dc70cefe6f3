"""Continuous batching for the embedded engine: rows join and leave at every forward.

Iteration-level scheduling as in Orca and vLLM, in their vocabulary: a *waiting* queue of
sample rows, rows *prefilling* their prompt and rows *decoding*. Each iteration
1. admits waiting rows while there is room (`max_batch` rows, and a KV budget that counts
   the cache the rows could grow to); the n samples of one prompt (and adapter) share one
   prefill, whose cache is copied to their slots when it is done;
2. builds one flat forward (`flat_step`): one token for every decoding row,
   then as much of the prompts being prefilled as the step's token budget leaves (a long
   prompt goes in chunks over several steps), helper, main and bare-base rows together;
3. samples a token for every decoding row and for every row whose prefill ended, each from
   its own generator (seeded from the request's seed and the sample index, so its random
   draws never depend on its batch);
4. lets rows that finished (EOS, stop string, budget, cancel) leave at once, freeing their
   slot, and completes a request when its last row has finished.

No preemption: a row is admitted only when the cache it could grow to fits, so it never has
to be evicted. `max_batch=1` generates every sample alone (see `deterministic`).
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

from coopcode.engines.base import Completion, Submission, derive_seed
from coopcode.engines.embedded import cpu_threads
from coopcode.engines.embedded.flat_step import SlotCache, StepPlan
from coopcode.engines.stops import find_stop, safe_length, stop_search_start
from coopcode.records.vocabulary import FinishReason

# Decode loops still running. A program may end without closing its engine; its decode thread
# (a daemon) would then still hold torch's CPU thread pools while the interpreter tears them
# down, and the process died now and then with "terminate called without an active
# exception" (exit code 134; about one run in two with the 0.5B model). So every loop still
# open is stopped, and its thread joined, when the interpreter exits.
_open_batchers: weakref.WeakSet[ContinuousBatcher] = weakref.WeakSet()


@atexit.register
def _close_open_batchers() -> None:
    for batcher in list(_open_batchers):
        batcher.close()

TOP_K_PREFILTER = 256  # nucleus sampling looks here first; falls back to a full sort if short
STEP_TOKENS = 256  # tokens in one forward: decode rows first, prompt chunks fill the rest
MIN_SHARED = 16  # a prompt prefix shorter than this is computed, not copied from another slot


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
        self.reason: str = FinishReason.LENGTH
        self.done = False
        self.started = 0.0
        self.seconds = 0.0
        self.slot = -1  # its place in the KV cache while it runs

    @property
    def key(self) -> tuple[tuple[int, ...], str | None]:
        """Rows with the same key share one prefill (the samples of a request, and requests
        of the same prompt, as a scheduler's one-sample requests are)."""
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
            self.finish(FinishReason.STOP)
        elif hit_eos:
            self.finish(FinishReason.STOP)
        elif len(self.ids) >= self.budget:
            self.finish(FinishReason.LENGTH)
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


class Workspace:
    """Sampling's scratch memory, kept from one step to the next: a step's distribution work
    runs over [rows, vocabulary] floats (64 x 151,936 for the 0.5B model, 39 MB), and fresh
    tensors of that size cost more in page faults than the arithmetic (at 64 rows, 65-74 ms a
    step allocating against 23 ms in buffers kept; BENCHMARKS.md, "Sampling's scratch
    memory")."""

    def __init__(self) -> None:
        self.buffers: dict[str, Any] = {}

    def get(self, name: str, rows: int, cols: int) -> Any:
        """A float32 [rows, cols] view of the buffer `name` (its contents undefined)."""
        import torch

        buf = self.buffers.get(name)
        if buf is None or buf.shape[0] < rows or buf.shape[1] != cols:
            buf = self.buffers[name] = torch.empty(rows, cols, dtype=torch.float32)
        return buf[:rows]


def pick_tokens(logits: Any, rows: list[Row], work: Workspace | None = None) -> list[int]:
    """Next token of each row, given their logits [len(rows), V].

    The distribution work (temperature, log-normalizer, top-k prefilter, nucleus cut) is
    done for the whole batch at once, in `work`'s buffers; only the draw is per row, from the
    row's generator.
    """
    import torch

    work = work or Workspace()
    logits = logits.cpu()
    temps = torch.tensor([r.temperature for r in rows], dtype=torch.float32)
    top_ps = torch.tensor([r.top_p for r in rows], dtype=torch.float32)
    hot = (temps > 0).nonzero().flatten()
    chosen = [0] * len(rows)
    cold = (temps <= 0).nonzero().flatten()
    if cold.numel():
        for i, token in zip(cold.tolist(), logits[cold].argmax(dim=-1).tolist()):
            chosen[i] = token  # greedy: the argmax (of the model's own format: the same one)
    if hot.numel() == 0:
        return chosen
    vocab = logits.shape[-1]
    scaled = work.get("scaled", hot.numel(), vocab)
    scaled.copy_(logits if hot.numel() == len(rows) else logits[hot])
    scaled.div_(temps[hot, None])
    k = min(TOP_K_PREFILTER, vocab)
    vals, idx = torch.topk(scaled, k, dim=-1)
    # log Z = max + log sum exp(scaled - max); the max is the top-k's first value.
    top = vals[:, :1]
    spread = torch.sub(scaled, top, out=work.get("spread", hot.numel(), vocab))
    log_z = spread.exp_().sum(dim=-1, keepdim=True).log_().add_(top)
    probs = torch.exp(vals - log_z)
    nucleus = top_ps[hot] < 1.0
    probs_cut = torch.where(nucleus[:, None], _nucleus(probs, top_ps[hot, None]), probs)
    short = nucleus & (probs.sum(dim=-1) < top_ps[hot])
    for j, i in enumerate(hot.tolist()):
        gen = rows[i].generator
        if not bool(nucleus[j]) and k < vocab:  # no nucleus: the whole vocabulary
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


class Forward(NamedTuple):
    """What one forward held: rows in flight, decode tokens, prompt chunk sizes, adapters."""

    rows: int
    decode: int
    chunks: list[int]
    adapters: list[str]


class Prefill:
    """Rows that share the prefill of one prompt under one adapter: `slot` (the first row's)
    holds it, and the other rows get a copy when it is done. A row cancelled meanwhile
    leaves at once; the slot is kept for the others (freed if no row is left)."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        self.slot = rows[0].slot
        self.prompt = rows[0].prompt_ids
        self.adapter = rows[0].adapter
        self.done = 0  # prompt tokens in the cache so far


class ContinuousBatcher:
    """The decode loop of one model, on its own thread; `submit` queues a request's rows.

    `forward(plan, adapters, tokens, positions, keep)` runs one flat forward (the adapter of
    each token, None for the bare base) and returns the logits of the positions in `keep`.
    """

    def __init__(
        self,
        forward: Callable[..., Any],
        encode: Callable[[str], list[int]],
        tokenizer: Any,
        eos_ids: set[int],
        lock: Any,
        cache: SlotCache,
        *,
        max_batch: int,
        kv_budget_tokens: int,
        pad_id: int,
        step_tokens: int = STEP_TOKENS,
    ) -> None:
        self.forward, self.encode, self.tok, self.eos_ids = forward, encode, tokenizer, eos_ids
        self.lock = lock  # the engine's: adapters do not change under a step
        self.cache = cache
        self.max_batch, self.kv_budget_tokens = max_batch, kv_budget_tokens
        self.pad_id = pad_id
        self.step_tokens = max(step_tokens, max_batch + 1)  # room for a chunk beside every row
        self.waiting: deque[Row] = deque()
        self.prefilling: list[Prefill] = []
        self.decoding: list[Row] = []
        self.left: dict[Submission, int] = {}  # rows of a request not finished yet
        self.rows_of: dict[Submission, list[Row]] = {}
        self.cv = threading.Condition()
        self.closed = False
        self.steps = 0  # forwards so far (for tests and benchmarks)
        self.peak_cache_tokens = 0  # the most the KV cache has held (slots x length)
        self.prompt_tokens = 0  # prompt tokens prefilled so far (shared prefills once)
        self.decode_tokens = 0  # tokens fed back to decode so far
        self.reused_tokens = 0  # prompt tokens copied from another slot instead of computed
        self.work = Workspace()  # sampling's scratch memory (`pick_tokens`)
        self.trace: list[Forward] | None = None  # a list: each forward is recorded (tests)
        self.thread = threading.Thread(target=self._loop, name="coopcode-decode", daemon=True)
        self.thread.start()
        _open_batchers.add(self)

    def submit(self, subs: list[Submission]) -> None:
        """Queue the rows of these requests together (they may share their first batch)."""
        queued = []
        for sub in subs:
            n = sub.request.params.n
            if n < 1:
                sub.future.set_result([])
                continue
            ids = self.encode(sub.request.prompt) or [self.pad_id]  # a forward needs a token
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
        _open_batchers.discard(self)

    @property
    def running(self) -> int:
        """Rows holding a slot (prefilling or decoding)."""
        return sum(len(p.rows) for p in self.prefilling) + len(self.decoding)

    # -- the loop -------------------------------------------------------------------------

    def _loop(self) -> None:
        import torch

        while True:
            with self.cv:
                if not self.closed and not self.waiting and not self.running:
                    cpu_threads.release()  # idle: the threads that compute next get the cores
                while not self.closed and not self.waiting and not self.running:
                    self.cv.wait()
                if self.closed:
                    self._fail_all(RuntimeError("the engine was closed"))
                    return
                joining = self._admit()
            try:
                with self.lock, torch.inference_mode():
                    self._start(joining)
                    self._step()
            except BaseException as e:  # noqa: BLE001 - every waiter hears of it
                self.prefilling, self.decoding = [], []
                self.cache.clear()
                self._fail_all(e)

    def _admit(self) -> list[Row]:
        """Waiting rows that fit now (cancelled ones finish without a forward)."""
        running = self.running
        longest = max([r.max_len() for p in self.prefilling for r in p.rows]
                      + [r.max_len() for r in self.decoding], default=0)
        joining: list[Row] = []
        while self.waiting:
            row = self.waiting[0]
            if row.sub.cancelled.is_set():
                self.waiting.popleft()
                row.finish(FinishReason.CANCELLED)
                self._row_done(row)
                continue
            rows = running + len(joining) + 1
            if rows > self.max_batch:
                break
            longest = max(longest, row.max_len())
            if rows > 1 and self.cache.tokens_after(rows, longest) > self.kv_budget_tokens:
                break  # a lone row is always admitted: it cannot wait for a smaller batch
            joining.append(self.waiting.popleft())
        return joining

    def _start(self, joining: list[Row]) -> None:
        """Give the joining rows their slots, one prefill per distinct (prompt, adapter): a
        prefill of the same key that has not started yet takes them too."""
        now = time.time()
        waiting = {p.rows[0].key: p for p in self.prefilling if p.done == 0 and p.rows}
        for row in joining:
            row.started = now
            row.slot = self.cache.take(row.max_len(), self.kv_budget_tokens, self.max_batch)
            pre = waiting.get(row.key)
            if pre is None:
                pre = waiting[row.key] = Prefill([row])
                self.prefilling.append(pre)
            else:
                pre.rows.append(row)
        self.peak_cache_tokens = max(self.peak_cache_tokens, self.cache.slots * self.cache.length)

    def _step(self) -> None:
        for row in [r for r in self.decoding if r.sub.cancelled.is_set()]:
            self.decoding.remove(row)
            self._leave(row, FinishReason.CANCELLED)
        for pre in list(self.prefilling):
            for row in [r for r in pre.rows if r.sub.cancelled.is_set()]:
                pre.rows.remove(row)
                if row.slot == pre.slot:
                    row.slot = -1  # the prefill keeps its slot for the other rows
                self._leave(row, FinishReason.CANCELLED)
            if not pre.rows:
                self.prefilling.remove(pre)
                self.cache.release(pre.slot)
        if not self.decoding and not self.prefilling:
            return
        plan = StepPlan(self.cache)
        tokens: list[int] = []
        positions: list[int] = []
        adapters: list[str | None] = []
        for row in self.decoding:  # the token each row sampled last, at its position
            pos = len(row.prompt_ids) + len(row.ids) - 1
            plan.decode_slots.append(row.slot)
            plan.decode_pos.append(pos)
            tokens.append(row.ids[-1])
            positions.append(pos)
            adapters.append(row.adapter)
        n_dec = len(self.decoding)
        keep = list(range(n_dec))  # the positions whose logits are sampled from
        room = self.step_tokens - n_dec
        ending: list[Prefill] = []
        held = None
        for pre in self.prefilling:
            if pre.done == 0:
                held = self._held_prompts() if held is None else held
                self._reuse_prefix(pre, held)
            n = min(room, len(pre.prompt) - pre.done)
            if n <= 0:
                break
            plan.chunks.append((pre.slot, pre.done, n, len(tokens)))
            tokens.extend(pre.prompt[pre.done:pre.done + n])
            positions.extend(range(pre.done, pre.done + n))
            adapters.extend([pre.adapter] * n)
            pre.done += n
            room -= n
            if pre.done == len(pre.prompt):
                ending.append(pre)
                keep.append(len(tokens) - 1)
        if self.trace is not None:
            self.trace.append(Forward(self.running, n_dec, [c[2] for c in plan.chunks],
                                      sorted({str(a) for a in adapters})))
        logits = self.forward(plan, adapters, tokens, positions, keep)
        self.steps += 1
        self.decode_tokens += n_dec
        self.prompt_tokens += len(tokens) - n_dec
        still: list[Row] = []
        for row, token in zip(self.decoding, pick_tokens(logits[:n_dec], self.decoding, self.work)):
            self._push(row, token, still)
        for pre, row_logits in zip(ending, logits[n_dec:]):
            self.prefilling.remove(pre)
            self.cache.copy(pre.slot, [r.slot for r in pre.rows if r.slot != pre.slot],
                            len(pre.prompt))
            if all(r.slot != pre.slot for r in pre.rows):
                self.cache.release(pre.slot)  # its row was cancelled
            picks = pick_tokens(row_logits[None].expand(len(pre.rows), -1), pre.rows, self.work)
            for row, token in zip(pre.rows, picks):
                self._push(row, token, still)
        self.decoding = still
        if not self.running:
            self.cache.clear()  # nothing in flight: give the memory back
            self.work.buffers.clear()

    def _held_prompts(self) -> list[tuple[int, list[int], str | None, int]]:
        """(slot, prompt, adapter, prompt tokens in the cache) of every slot holding one."""
        held = [(r.slot, r.prompt_ids, r.adapter, len(r.prompt_ids)) for r in self.decoding]
        held += [(p.slot, p.prompt, p.adapter, p.done) for p in self.prefilling if p.done]
        return held

    def _reuse_prefix(self, pre: Prefill, held: list[tuple[int, list[int], str | None, int]]
                      ) -> None:
        """Start `pre` after the longest prefix of its prompt that a slot already holds under
        the same adapter (copied, not computed again): the n mains of a problem share the
        problem statement, a multi-turn prompt its earlier turns. Keys and values of a
        position depend only on the tokens up to it and the adapter, so the copy is what the
        prefill would compute (up to the rounding of another batch)."""
        best, source = 0, -1
        limit = len(pre.prompt) - 1  # the last prompt token is computed: it gives the logits
        for slot, prompt, adapter, filled in held:
            if adapter != pre.adapter or filled <= best or prompt[:MIN_SHARED] != pre.prompt[:MIN_SHARED]:
                continue
            n = min(filled, limit, len(prompt))
            same = next((i for i in range(n) if prompt[i] != pre.prompt[i]), n)
            if same > best:
                best, source = same, slot
        if best >= MIN_SHARED:
            self.cache.copy(source, [pre.slot], best)
            pre.done = best
            self.reused_tokens += best

    def _push(self, row: Row, token: int, still: list[Row]) -> None:
        if row.sub.cancelled.is_set():
            self._leave(row, FinishReason.CANCELLED)
        elif row.push(token):
            self._leave(row, None)
        else:
            still.append(row)

    def _leave(self, row: Row, reason: str | None) -> None:
        if reason is not None:
            row.finish(reason)
        if row.slot >= 0:
            self.cache.release(row.slot)
        row.slot = -1
        self._row_done(row)

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
