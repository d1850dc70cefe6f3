"""An engine for any OpenAI-compatible server: `vllm serve`, SGLang, llama.cpp's server, TGI.

Prompts are rendered here with the model's own tokenizer (chat template included) and sent
raw to `/v1/completions`: the answer is pre-filled with a code fence and the function's
signature, which the chat endpoint cannot do. Each sample is one streamed request with its
own seed (derive_seed of the request's seed and the sample's index), so a sample is the same
whatever else the server is running, and a resumed run asks for exactly the samples missing.
A request's n samples go out as n requests: servers that cache prefixes (vLLM does by
default) still compute the shared prompt once.

Several base URLs (replicas of one model) share the load: each sample goes to the replica
with the fewest requests in flight, at most `max_inflight` per replica. The official SDK
retries connection errors, 429 and 5xx with exponential backoff and jitter; a stream that
breaks after it began is retried here from the start (the same seed gives the same sample).
A replica that stops answering while others still do is dropped for the rest of the run:
its requests are sent again to the others, and the run says so once. When the last server
stays unreachable, the error names it in one line; a bench rerun resumes.

Agents map to served model names: the helper's adapter is `helper_model` (for `vllm serve
--enable-lora --lora-modules helper=... main=...`, the name given there), the main agent's
`main_model`, and requests without an adapter go to the base model the server lists first.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from coopcode.core.errors import ModelError, UserError
from coopcode.engines.base import (
    Completion,
    Engine,
    GenerationRequest,
    SampleDelta,
    Submission,
    derive_seed,
)
from coopcode.engines.stops import find_stop, safe_length, stop_search_start
from coopcode.models import ResolvedModel, resolve_model
from coopcode.records.vocabulary import FinishReason

MAX_SERVER_STOPS = 4  # the OpenAI API's limit, which vLLM enforces (VLLM_MAX_STOP_STRINGS)


class ServerError(UserError):
    """The server cannot be reached or keeps failing: one line naming it."""


class _StreamBroke(Exception):
    """A stream that had begun ended in a connection error (the server died mid-answer)."""


def _guarded(stream: Any) -> Any:
    """The stream's chunks; a connection error mid-stream becomes `_StreamBroke`."""
    import openai

    try:
        yield from stream
    except openai.APIConnectionError as e:
        raise _StreamBroke(f"{type(e).__name__}: {str(e).splitlines()[0][:120]}") from None


class _Replica:
    def __init__(self, base_url: str, client: Any) -> None:
        self.base_url, self.client = base_url, client
        self.inflight = 0
        self.down = ""  # why it stopped answering ("" while it answers)


class OpenAIEngine(Engine):
    name = "openai"

    def __init__(
        self,
        model: ResolvedModel | str | None = None,
        *,
        base_urls: Sequence[str],
        api_key_env: str | None = None,
        helper_model: str | None = None,
        main_model: str | None = None,
        base_model: str | None = None,
        max_inflight: int = 32,
        timeout: float = 600.0,
        max_retries: int = 4,
        progress: Any = None,
        **_ignored: Any,
    ) -> None:
        import openai
        from transformers import AutoTokenizer

        if not base_urls:
            raise UserError("--engine openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
        say = progress or (lambda _m: None)
        self._say = say
        key = "EMPTY"  # vLLM and llama.cpp accept anything unless started with a key
        if api_key_env:
            key = os.environ.get(api_key_env, "")
            if not key:
                raise UserError(f"--api-key-env {api_key_env}: that environment variable is empty or unset")
        self.replicas = [
            _Replica(url.rstrip("/"), openai.OpenAI(base_url=url.rstrip("/"), api_key=key,
                                                    max_retries=max_retries, timeout=timeout))
            for url in base_urls]
        self.max_retries = max_retries
        served = self._served_models()
        self.base_model = base_model or served[0]
        self.served = {"helper": helper_model, "main": main_model}
        for role, name in self.served.items():
            if name is not None and name not in served:
                raise UserError(f"--{role}-model {name}: {self.replicas[0].base_url} serves "
                                f"{', '.join(served)}")
        # The tokenizer renders the chat template locally (the prompt must be raw text).
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, say)
        self.resolved = resolved
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(resolved.path)
        except (OSError, ValueError) as e:
            raise ModelError(f"cannot load the tokenizer of {resolved.name}: {str(e).splitlines()[0]}") from None
        self.instruct = resolved.instruct if resolved.instruct is not None else bool(
            getattr(self.tokenizer, "chat_template", None))
        self.model_name = resolved.name
        self.model_fingerprint = resolved.fingerprint
        self.max_inflight = max_inflight
        self.preferred_concurrency = max_inflight * len(self.replicas)
        self._lock = threading.Lock()
        self._free = threading.Condition(self._lock)
        self._pool = ThreadPoolExecutor(self.preferred_concurrency, thread_name_prefix="coopcode-openai")
        self._adapters: dict[str, str] = {r: n for r, n in self.served.items() if n}
        # vLLM can stream the sampled token ids: a trainer then scores exactly the tokens
        # that were drawn (re-tokenizing the text can split it differently).
        self.token_ids_from_server = _server_version(self.replicas[0].base_url) is not None
        self._versions: dict[str, int] = {}  # adapters loaded at run time: their version

    # -- what the server is ---------------------------------------------------------------

    def _served_models(self) -> list[str]:
        """The models the first replica serves, the base first (its LoRA modules after)."""
        import openai

        names: list[str] = []
        for replica in self.replicas:
            try:
                models = list(replica.client.with_options(max_retries=1, timeout=30).models.list())
            except openai.APIError as e:
                raise ServerError(f"no OpenAI-compatible server answers at {replica.base_url} "
                                  f"({type(e).__name__}: {str(e).splitlines()[0][:120]})") from None
            ids = [m.id for m in sorted(models, key=lambda m: getattr(m, "parent", None) is not None)]
            if not ids:
                raise ServerError(f"{replica.base_url} serves no model")
            if names and ids[0] != names[0]:
                raise UserError(f"--base-url replicas serve different models: {names[0]} and {ids[0]}")
            names = names or ids
        return names

    def describe(self) -> dict[str, Any]:
        """For meta.json: where the samples came from."""
        return {"base_urls": [r.base_url for r in self.replicas], "base_model": self.base_model,
                "served": {k: v for k, v in self.served.items() if v},
                "server_versions": [_server_version(r.base_url) for r in self.replicas],
                "max_inflight": self.max_inflight}

    def adapters(self) -> dict[str, str]:
        return dict(self._adapters)

    def _served_names(self) -> set[str]:
        """Every model name the replicas serve now (base and adapters)."""
        names: set[str] = set()
        for replica in self.replicas:
            try:
                names |= {m.id for m in replica.client.with_options(max_retries=1, timeout=30).models.list()}
            except Exception:  # noqa: BLE001 - a replica that does not answer is found later
                continue
        return names

    def load_adapter(self, name: str, path: str) -> None:
        """Serve the adapter at `path` as agent `name`: loaded on every replica under a new
        served name (vLLM's runtime LoRA loading: start `vllm serve` with
        VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; `path` must be readable by the servers), then
        the previous version is unloaded. A trainer calls this after each optimizer step."""
        import httpx2 as httpx

        if name in self._versions:
            version = self._versions[name] + 1
        else:
            # A server outlives a run: a resumed (or another) run must not ask for a served
            # name an earlier process loaded, which vLLM refuses ("already been loaded").
            taken = [int(m.group(1)) for n in self._served_names()
                     if (m := re.fullmatch(rf"{re.escape(name)}-v(\d+)", n))]
            version = max(taken, default=0) + 1
        served = f"{name}-v{version}"
        folder = str(Path(path).resolve())
        for replica in self.replicas:
            try:
                reply = httpx.post(f"{replica.base_url}/load_lora_adapter", timeout=120,
                                   json={"lora_name": served, "lora_path": folder})
            except httpx.HTTPError as e:
                raise ServerError(f"{replica.base_url} did not answer load_lora_adapter ({e})") from None
            if reply.status_code == 404:
                raise ServerError(f"{replica.base_url} cannot load adapters at run time: start vllm "
                                  f"serve with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora")
            if reply.status_code != 200:
                raise ServerError(f"{replica.base_url} refused adapter {folder} "
                                  f"({reply.status_code}: {reply.text.strip()[:200]})")
        old = self._adapters.get(name) if name in self._versions else None
        self._adapters[name], self._versions[name] = served, version
        if old is not None:
            for replica in self.replicas:
                try:
                    httpx.post(f"{replica.base_url}/unload_lora_adapter", timeout=60,
                               json={"lora_name": old})
                except httpx.HTTPError:
                    pass  # the old version only takes a slot until the server evicts it

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_tokens(self, text: str) -> int:
        return len(self.encode(text))

    # -- generation -----------------------------------------------------------------------

    def submit(self, request: GenerationRequest, on_delta: SampleDelta | None = None) -> Submission:
        sub = Submission(request, on_delta)
        n = request.params.n
        if request.adapter is not None and request.adapter not in self._adapters:
            sub.future.set_exception(ModelError(
                f"adapter {request.adapter!r} is not served: pass --{request.adapter}-model"))
            return sub
        results: list[Completion | None] = [None] * n
        left = [n]
        guard = threading.Lock()

        def one(i: int) -> None:
            try:
                c = self._sample(sub, i)
            except BaseException as e:  # noqa: BLE001 - handed to the waiter
                sub.cancel()  # the others of this request are pointless now
                if not sub.future.done():
                    sub.future.set_exception(e)
                return
            with guard:
                results[i] = c
                left[0] -= 1
                last = left[0] == 0
            if last and not sub.future.done():
                sub.future.set_result([r for r in results if r is not None])

        if n < 1:
            sub.future.set_result([])
        for i in range(n):
            self._pool.submit(one, i)
        return sub

    def _acquire(self) -> _Replica:
        with self._free:
            while True:
                alive = [r for r in self.replicas if not r.down]
                if not alive:  # the last one went down while this sample waited
                    last = self.replicas[-1]
                    raise ServerError(f"every server stopped answering (the last: {last.base_url}, "
                                      f"{last.down}); rerun to resume once one is back")
                replica = min(alive, key=lambda r: r.inflight)
                if replica.inflight < self.max_inflight:
                    replica.inflight += 1
                    return replica
                self._free.wait()

    def _drop(self, replica: _Replica, why: str) -> bool:
        """Take a replica that stopped answering out of the run, if another still answers
        (True: send the sample elsewhere). Said once per replica."""
        with self._free:
            if replica.down:
                return True
            if not any(r is not replica and not r.down for r in self.replicas):
                return False
            replica.down = why
            self._free.notify_all()
        self._say(f"warning: the server at {replica.base_url} stopped answering ({why}): its "
                  "requests go to the other replicas for the rest of the run")
        return True

    def _release(self, replica: _Replica) -> None:
        with self._free:
            replica.inflight -= 1
            self._free.notify()

    def _sample(self, sub: Submission, i: int) -> Completion:
        """Sample i of a request, streamed. The SDK retries a request that fails to start
        (connection errors, 429, 5xx: backoff with jitter); a stream that breaks after it
        began is retried here from the start, as often, with the same backoff."""
        import openai

        broke = 0
        while True:
            if sub.cancelled.is_set():
                return Completion("", 0, FinishReason.CANCELLED)
            replica = self._acquire()
            try:
                return self._stream(replica, sub, i)
            except _StreamBroke as e:
                if self._drop(replica, str(e)):
                    continue  # sent again, to a replica that answers
                broke += 1
                if broke > self.max_retries:
                    raise ServerError(f"the server at {replica.base_url} keeps breaking off streams "
                                      f"({e}); rerun to resume once it is back") from None
                time.sleep(min(8.0, 0.5 * 2 ** broke) * (1 - 0.25 * random.random()))
            except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError) as e:
                why = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
                if isinstance(e, openai.APIConnectionError) and self._drop(replica, why):
                    continue
                raise ServerError(f"the server at {replica.base_url} keeps failing ({why}); "
                                  "rerun to resume once it is back") from None
            except openai.APIStatusError as e:
                raise ServerError(f"{replica.base_url} refused a request ({e.status_code}: "
                                  f"{str(e).splitlines()[0][:160]})") from None
            finally:
                self._release(replica)

    def _stream(self, replica: _Replica, sub: Submission, i: int) -> Completion:
        p = sub.request.params
        model = self.base_model if sub.request.adapter is None else self._adapters[sub.request.adapter]
        started = time.time()
        # The OpenAI API (and vLLM by default) takes at most 4 stop strings: the first four go
        # to the server, and every stop string is also checked here on the streamed text.
        stops = list(p.stop)
        stream = replica.client.completions.create(
            model=model, prompt=sub.request.prompt, max_tokens=p.max_new_tokens,
            temperature=p.temperature, top_p=p.top_p if p.temperature > 0 else 1.0,
            seed=derive_seed(p.seed, p.index + i), stop=stops[:MAX_SERVER_STOPS] or None, n=1,
            stream=True, stream_options={"include_usage": True},
            extra_body={"return_token_ids": True} if self.token_ids_from_server else None)
        text, shown, chunks, reported, reason, usage = "", 0, 0, 0, FinishReason.LENGTH, None
        ids: list[int] = []
        cut_here = False
        try:
            for chunk in _guarded(stream):
                if sub.cancelled.is_set():
                    reason = FinishReason.CANCELLED
                    break
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage.completion_tokens
                for choice in chunk.choices or []:
                    ids += (getattr(choice, "model_extra", None) or {}).get("token_ids") or []
                    if choice.text:
                        text += choice.text
                        chunks += 1  # one streamed chunk per token (vLLM); usage corrects it
                    if choice.finish_reason:
                        reason = (FinishReason.LENGTH if choice.finish_reason == FinishReason.LENGTH
                                  else FinishReason.STOP)
                cut = find_stop(text, stops, stop_search_start(shown, stops))
                if cut is not None:  # a stop string the server was not given
                    text, reason, cut_here = text[:cut], FinishReason.STOP, True
                    break
                safe = safe_length(text, stops)
                if safe > shown and sub.on_delta is not None:
                    sub.on_delta(i, text[shown:safe], chunks - reported)
                    shown, reported = safe, chunks
        finally:
            stream.close()  # on cancel or a client-side stop: the server stops generating
        n_tokens = usage if usage is not None else chunks
        if reason != FinishReason.CANCELLED and sub.on_delta is not None and (
                len(text) > shown or n_tokens > reported):
            # What was held back, and tokens that came with no text (EOS, the stop string).
            sub.on_delta(i, text[shown:], max(0, n_tokens - reported))
        if not ids or reason == FinishReason.CANCELLED or cut_here:
            ids = self.encode(text)  # no ids from the server, or the text was cut here
        return Completion(text=text, n_tokens=n_tokens, finish_reason=reason,
                          token_ids=ids, seconds=time.time() - started)

    def close(self) -> None:
        super().close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        for r in self.replicas:
            r.client.close()


def _server_version(base_url: str) -> str | None:
    """What the server says it is (vLLM answers GET /version), or None."""
    import httpx2 as httpx

    root = base_url.removesuffix("/v1")
    try:
        reply = httpx.get(f"{root}/version", timeout=5)
        return str(reply.json().get("version")) if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
