"""The Engine interface: turn prompts into sampled completions, streaming deltas as they come.

Implementations: `TransformersEngine` (default: one base model in memory, helper and main as
named LoRA adapters, each row of a batch with its own), `VLLMEngine` (vLLM in-process, lazy
import), `OpenAIEngine` (OpenAI-compatible servers such as `vllm serve`, replicas
least-loaded first) and `ScriptedEngine` (deterministic, for tests and UI work). The loadable
ones are registered by name in `coopcode.engines.registry`; a new one implements the few
methods below and registers an `EngineKind`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field, replace

from coopcode.records.vocabulary import FinishReason

# (request index, sample index, text delta, tokens): `tokens` is how many newly sampled tokens
# the delta covers. Text that could begin a stop string is held back, so a delta may cover
# several tokens, and a finished sample's last delta may carry tokens with no text (EOS, the
# stop string itself); a sample's deltas add up to its text and to its n_tokens. Called from
# the generating thread.
DeltaCallback = Callable[[int, int, str, int], None]


@dataclass(frozen=True)
class SamplingParams:
    n: int = 1  # completions per prompt
    max_new_tokens: int = 384
    temperature: float = 0.8  # 0 means greedy
    top_p: float = 0.95
    seed: int = 0  # sample i of a request uses seed derive_seed(seed, index + i): batch-independent
    # The first sample's index: a request for sample g alone (n=1, index=g) draws what sample
    # g of an n-sample request would (a scheduler asks for samples one by one).
    index: int = 0
    stop: tuple[str, ...] = ()  # generation of a sample ends at the first of these (excluded)

    def with_(self, **changes: object) -> SamplingParams:
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GenerationRequest:
    prompt: str  # fully rendered text: chat template (if any) already applied
    params: SamplingParams = field(default_factory=SamplingParams)
    adapter: str | None = None  # a loaded adapter's name; None is the bare base model


@dataclass
class Completion:
    text: str  # generated text, cut before the stop string
    n_tokens: int
    finish_reason: str  # a `FinishReason`: stop (EOS or a stop string), length, cancelled
    token_ids: list[int] = field(default_factory=list)  # sampled ids (through the stop)
    seconds: float = 0.0  # wall time of the batch this sample was generated in


def derive_seed(seed: int, index: int) -> int:
    """A per-sample seed, so sample i is the same whatever batch it was generated in."""
    return (seed * 1_000_003 + index * 7919 + 0x9E3779B9) % (2**63 - 1)


# (sample index, text delta, tokens) for one submitted request.
SampleDelta = Callable[[int, str, int], None]


class Submission:
    """A request in flight: `future` gives its completions (one per sample, in order) when all
    samples have finished; `cancel()` asks the engine to stop it (its samples then finish
    with reason "cancelled")."""

    def __init__(self, request: GenerationRequest, on_delta: SampleDelta | None = None) -> None:
        self.request = request
        self.on_delta = on_delta
        self.future: Future[list[Completion]] = Future()
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def result(self, timeout: float | None = None) -> list[Completion]:
        return self.future.result(timeout)


class Engine(ABC):
    """Generates completions for a base model with optional named adapters.

    Two ways in, and an engine implements at least one of them:
    - `generate(requests)`: a whole batch at once, blocking (the simple engines);
    - `submit(request)`: one request into the engine's own queue, returning at once; the
      continuous-batching engines (rows join and leave between decode steps, servers).
    Each is derived from the other where an engine implements only one: `submit` on a
    batch engine queues the request and a worker thread hands everything queued to
    `generate` whenever the previous batch is done, so a scheduler keeps it full either way.
    """

    name: str = "engine"
    model_name: str = ""
    model_fingerprint: str = ""
    instruct: bool = True  # prompts use the chat template (else plain completion)
    # True when a sample's text depends only on its prompt, params and seed, never on what
    # it was batched with (see TransformersEngine's `deterministic`).
    deterministic: bool = False

    # How many samples a scheduler should keep in flight to keep this engine busy.
    preferred_concurrency: int = 16

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[list[Completion]]:
        """`params.n` completions for each request, in request order."""
        if type(self).submit is Engine.submit:
            raise NotImplementedError(f"{type(self).__name__} implements neither generate nor submit")
        def relay(ri: int) -> SampleDelta | None:
            if on_delta is None:
                return None
            return lambda si, text, n: on_delta(ri, si, text, n)

        subs = self.submit_all([(r, relay(ri)) for ri, r in enumerate(requests)])
        try:
            for s in subs:
                while not s.future.done():
                    if cancel is not None and cancel.is_set():
                        for other in subs:
                            other.cancel()
                        cancel = None
                    wait([s.future], timeout=None if cancel is None else 0.05)
            return [s.result() for s in subs]
        except BaseException:  # KeyboardInterrupt too: stop what is still generating
            for s in subs:
                s.cancel()
            raise

    def submit_all(self, requests: Sequence[tuple[GenerationRequest, SampleDelta | None]]
                   ) -> list[Submission]:
        """Queue several requests at once (so they can share a first batch); see `submit`."""
        return [self.submit(r, d) for r, d in requests]

    def submit(self, request: GenerationRequest, on_delta: SampleDelta | None = None) -> Submission:
        """Queue `request` and return at once; see `Submission`."""
        sub = Submission(request, on_delta)
        with _batcher_lock:
            batcher = self.__dict__.get("_generic_batcher")
            if batcher is None:
                batcher = self.__dict__["_generic_batcher"] = _Batcher(self)
        batcher.put(sub)
        return sub

    @abstractmethod
    def render_chat(self, messages: list[dict[str, str]]) -> str:
        """The prompt text for a chat, ending where the assistant's answer begins."""

    def load_adapter(self, name: str, path: str) -> None:
        """Make adapter `path` available as `name` (raise ModelError when unusable)."""
        raise NotImplementedError(f"{self.name} engine does not support adapters")

    def adapters(self) -> dict[str, str]:
        """Loaded adapters: name -> path."""
        return {}

    def encode(self, text: str) -> list[int]:
        """Token ids of a rendered prompt, as the engine tokenizes it to generate (training
        scores completions against these ids)."""
        raise NotImplementedError(f"the {self.name} engine ({type(self).__name__}) does not "
                                  "give token ids, which training needs: train with an "
                                  "engine that implements encode")

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 4)

    def describe(self) -> dict[str, object]:
        """Settings that shape the samples, for the results' meta.json."""
        return {}

    def close(self) -> None:
        """Release the model (engines may hold GBs). Engines that override this call it too:
        it stops the worker thread `submit` started, waiting for the batch it is in (a thread
        still inside torch when the interpreter exits aborts the process)."""
        with _batcher_lock:
            batcher = self.__dict__.pop("_generic_batcher", None)
        if batcher is not None:
            batcher.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_batcher_lock = threading.Lock()


class _Batcher:
    """`submit` for an engine that only has `generate`: a worker thread hands everything
    queued to `generate` as one batch whenever the previous batch has finished."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.queue: list[Submission] = []
        self.cv = threading.Condition()
        self.closed = False
        self.current: threading.Event | None = None  # the running batch's cancel
        self.thread = threading.Thread(target=self._loop, name=f"{engine.name}-batcher", daemon=True)
        self.thread.start()

    def put(self, sub: Submission) -> None:
        with self.cv:
            if self.closed:
                raise RuntimeError("the engine is closed")
            self.queue.append(sub)
            self.cv.notify()

    def close(self, timeout: float = 60.0) -> None:
        """Cancel the running batch and fail what is queued (the worker does, on its way out);
        return once the worker has left `generate`."""
        with self.cv:
            self.closed = True
            if self.current is not None:
                self.current.set()
            self.cv.notify()
        if self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self.cv:
                while not self.queue and not self.closed:
                    self.cv.wait()
                if self.closed:
                    for s in self.queue:
                        s.future.set_exception(RuntimeError("the engine was closed"))
                    return
                batch, self.queue = self.queue, []
            live = [s for s in batch if not s.cancelled.is_set()]
            for s in batch:
                if s.cancelled.is_set():
                    s.future.set_result([Completion("", 0, FinishReason.CANCELLED)
                                         for _ in range(s.request.params.n)])
            if not live:
                continue
            cancel = threading.Event()
            with self.cv:
                self.current = cancel
                if self.closed:
                    cancel.set()
            watcher = threading.Thread(target=_cancel_when_all, args=(live, cancel), daemon=True)
            watcher.start()

            def relay(ri: int, si: int, text: str, n: int, _live: list[Submission] = live) -> None:
                if _live[ri].on_delta is not None:
                    _live[ri].on_delta(si, text, n)  # type: ignore[misc]

            try:
                results = self.engine.generate([s.request for s in live], on_delta=relay, cancel=cancel)
            except BaseException as e:  # noqa: BLE001 - handed to every waiter
                for s in live:
                    s.future.set_exception(e)
            else:
                for s, r in zip(live, results):
                    s.future.set_result(r)
            finally:
                cancel.set()  # ends the watcher


def _cancel_when_all(subs: list[Submission], cancel: threading.Event) -> None:
    """A batch engine's generate takes one cancel event: set it once every request in the
    batch is cancelled (a lone cancelled request finishes with the rest, then is dropped)."""
    while not cancel.wait(0.05):
        if all(s.cancelled.is_set() for s in subs):
            cancel.set()
