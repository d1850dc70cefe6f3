"""A deterministic engine that "generates" scripted text: a real Engine for tests and UI work.

It streams its script in small chunks (optionally with a delay per chunk), honours stop
strings, token budgets and cancellation exactly as the real engines do, so UI and pipeline
code can be tested token by token without a model.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Sequence

from coopcode.engines.base import Completion, DeltaCallback, Engine, GenerationRequest, derive_seed
from coopcode.records.vocabulary import FinishReason

# script(prompt, adapter, sample index) -> the text to "generate"; a script that takes a
# fourth argument also gets the sample's seed (derive_seed of the request's seed and index),
# so tests can see which random stream each sample would have drawn from.
Script = Callable[..., str]


class ScriptedEngine(Engine):
    name = "scripted"
    deterministic = True  # a script's text never depends on the batch

    def __init__(
        self,
        script: Script | dict[str | None, str | list[str]],
        *,
        chunk: int = 4,
        delay: float = 0.0,
        instruct: bool = True,
        model_name: str = "scripted",
    ) -> None:
        self.script = script if callable(script) else self._from_table(script)
        self._seeded = callable(script) and len(inspect.signature(script).parameters) >= 4
        self.chunk, self.delay = chunk, delay
        self.instruct = instruct
        self.model_name = model_name
        self.model_fingerprint = "scripted"
        self._adapters: dict[str, str] = {}
        self.calls: list[list[GenerationRequest]] = []  # one entry per generate() call

    @staticmethod
    def _from_table(table: dict[str | None, str | list[str]]) -> Script:
        def script(prompt: str, adapter: str | None, index: int) -> str:
            texts = table.get(adapter, table.get(None, ""))
            if isinstance(texts, list):
                return texts[index % len(texts)] if texts else ""
            return texts

        return script

    def encode(self, text: str) -> list[int]:
        """Token ids of a prompt: its UTF-8 bytes (a script has no vocabulary)."""
        return list(text.encode())

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        turns = "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages)
        return turns + "<|assistant|>\n"

    def load_adapter(self, name: str, path: str) -> None:
        self._adapters[name] = path

    def adapters(self) -> dict[str, str]:
        return dict(self._adapters)

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[list[Completion]]:
        self.calls.append(list(requests))
        out: list[list[Completion]] = []
        for ri, req in enumerate(requests):
            per = []
            for si in range(req.params.n):
                started = time.time()
                index = req.params.index + si
                if self._seeded:
                    full = self.script(req.prompt, req.adapter, index, derive_seed(req.params.seed, index))
                else:
                    full = self.script(req.prompt, req.adapter, index)
                reason = FinishReason.STOP
                hits = [p for s in req.params.stop if (p := full.find(s)) >= 0]
                if hits:
                    full = full[: min(hits)]
                pieces = [full[i:i + self.chunk] for i in range(0, len(full), self.chunk)]
                if len(pieces) > req.params.max_new_tokens:
                    pieces, reason = pieces[: req.params.max_new_tokens], FinishReason.LENGTH
                text, sent = "", 0
                for piece in pieces:
                    if cancel is not None and cancel.is_set():
                        reason = FinishReason.CANCELLED
                        break
                    if self.delay:
                        time.sleep(self.delay)
                    text += piece
                    sent += 1
                    if on_delta is not None:
                        on_delta(ri, si, piece, 1)  # a chunk stands for one token
                per.append(Completion(text=text, n_tokens=sent,
                                      finish_reason=reason, seconds=time.time() - started))
            out.append(per)
        return out
