"""The default engine: Hugging Face transformers, one base model, LoRA adapters by name.

Helper and main are PEFT adapters on one shared base in memory (two full copies would double
the memory for nothing); a request names its adapter, or none for the bare base. Requests go
into a continuously batched loop (`coopcode.engines.batching`) whose every forward is one
flat sequence (`coopcode.engines.flat_step`):
- on a CPU a forward for 32 decoding rows costs a few times one for a single row (the
  weights are read once), so tokens/s grows with the batch (up to `max_batch` rows, and a
  KV cache of `kv_cache_gb`);
- prompts that arrive are prefilled inside the same forwards as the running rows' decode
  tokens (a token budget per forward; a long prompt goes in chunks), so the batch never
  stops for a prefill;
- the n samples of a prompt share one prefill of it (its cache is copied to the n rows);
- a row that has finished (EOS, stop string, budget) leaves at once, freeing its slot;
- helper, main and bare-base rows share every forward (each token gets its own adapter's
  LoRA delta);
- a forward of a single token (one stream, as the TUI shows), one of a few rows that all
  decode, and one of a batch each run on whichever kernels were measured fastest for it on
  this machine and model (`choose_kernels`: oneDNN's, torch's own, oneDNN's on prepacked
  weights, for one token of an fp32 model a bf16 copy of the weights:
  `coopcode.engines.weight_copies`, or for decoding rows the whole step in one compiled call:
  `coopcode.engines.fused_decode`), and threads that wait on the decode loop give their CPU
  workers back (`coopcode.engines.cpu_threads`).

Each sample draws from its own random generator, seeded from (params.seed, sample index), so
its random draws do not depend on which batch it landed in. Its *arithmetic* does: matrix
products over a batch of another shape round differently (in bf16 and in fp32), and a token
whose probability sits on a draw's boundary can then flip. So a sample regenerated in another
batch (after a resume, say) is a fair sample with the same seed, but not always the same text.
`deterministic=True` generates every sample alone (prefill and decode at batch size one):
the same seed then gives the same text whatever else is running, at the price of batching.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any

from coopcode.core.errors import ModelError
from coopcode.engines import cpu_threads
from coopcode.engines.base import Engine, GenerationRequest, SampleDelta, Submission
from coopcode.engines.batching import ContinuousBatcher
from coopcode.engines.flat_step import ATTENTION, SlotCache, TokenLora, register_attention
from coopcode.models import ResolvedModel, resolve_model


def cpu_has_bf16() -> bool:
    """Whether the CPU has native bf16 instructions and torch may use them
    (`ATEN_CPU_CAPABILITY=avx2` makes an AVX-512 machine run as an AVX2-only one)."""
    import torch

    if not torch.backends.cpu.get_cpu_capability().startswith("AVX512"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


FORMAT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "coopcode" / "cpu-format.json"


def _cpu_key() -> str:
    """What decides which number format is fastest: the CPU, the kernels torch may use, torch."""
    import torch

    model = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    held = [f"{v}={os.environ[v]}" for v in ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")
            if os.environ.get(v)]
    return " | ".join([model, torch.backends.cpu.get_cpu_capability(), f"bf16 {cpu_has_bf16()}",
                       *held, f"torch {torch.__version__}", f"threads {torch.get_num_threads()}"])


def time_cpu_formats(rows: int = 32, d_in: int = 896, d_out: int = 4864, reps: int = 6) -> dict[str, float]:
    """Seconds for one `rows` x `d_in` by `d_in` x `d_out` product (a 0.5B model's MLP, a
    full batch's rows) in bf16 and in fp32: the best of `reps` rounds of 4."""
    import torch
    import torch.nn.functional as F

    seconds = {}
    with torch.inference_mode():
        for name in ("bfloat16", "float32"):
            dt = getattr(torch, name)
            gen = torch.Generator().manual_seed(0)
            x = torch.randn(rows, d_in, generator=gen).to(dt)
            w = torch.randn(d_out, d_in, generator=gen).to(dt)
            F.linear(x, w)  # kernel selection, first-touch
            best = float("inf")
            for _ in range(reps):
                t0 = time.perf_counter()
                for _ in range(4):
                    F.linear(x, w)
                best = min(best, (time.perf_counter() - t0) / 4)
            seconds[name] = best
    return seconds


def _format_cache() -> dict[str, Any]:
    """All FORMAT_CACHE holds ({} if nothing, or the file is unreadable)."""
    import json

    try:
        known = json.loads(FORMAT_CACHE.read_text())
    except (OSError, ValueError):
        return {}
    return known if isinstance(known, dict) else {}


def _remembered(key: str) -> dict[str, Any]:
    """What FORMAT_CACHE holds for `key` ({} if nothing)."""
    entry = _format_cache().get(key)
    return entry if isinstance(entry, dict) else {}


def _remember(key: str, entry: dict[str, Any]) -> None:
    """Store `entry` under `key` in FORMAT_CACHE (written whole, then renamed; a failure only
    means measuring again next time)."""
    import json

    known = _format_cache()
    known[key] = entry
    try:
        FORMAT_CACHE.parent.mkdir(parents=True, exist_ok=True)
        tmp = FORMAT_CACHE.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1))
        tmp.replace(FORMAT_CACHE)
    except OSError:
        pass


def measured_cpu_dtype() -> str:
    """The number format the embedded engine runs in on this CPU: bf16 or fp32, whichever
    multiplies a full batch faster here, measured once per machine (and torch, and thread
    count) and remembered in FORMAT_CACHE. A full batch, because benches and training spend
    their time there: on a CPU with native bf16 that is bf16; on an AVX2-only CPU torch
    emulates bf16 and fp32 is faster (BENCHMARKS.md, "Number formats")."""
    key = _cpu_key()
    known = _remembered(key)
    if known.get("dtype") in ("bfloat16", "float32"):
        return str(known["dtype"])
    seconds = time_cpu_formats()
    choice = "bfloat16" if seconds["bfloat16"] < seconds["float32"] else "float32"
    _remember(key, {"dtype": choice, "seconds": seconds})
    return choice


def choose_kernels(model: Any, key: str, options: dict[str, list[str]],
                   make_copies: Callable[[set[str]], Any], reps: int = 3
                   ) -> tuple[dict[str, list[str]], Any]:
    """The matrix kernels of the decode loop's forwards here, per kind of forward: "one"
    (a single token: one stream), "few" (2 to `FusedDecoder.max_rows` rows that each decode
    a token, no prompt among them; offered with the fused step) and "many" (any other
    batch), each from `options[kind]`: "onednn" (torch's default on a CPU), "aten"
    (torch's own, oneDNN switched off), or one that multiplies by a copy of the weights
    (`coopcode.engines.weight_copies`, made by `make_copies`): "packed" (oneDNN on prepacked
    weights) or "bf16" (a bf16 copy of fp32 weights on torch's own kernels); or "fused" (the
    whole step of those rows in one compiled call, `coopcode.engines.fused_decode`). Timed on
    `model` itself (best of `reps` forwards of 1, `max_rows` and 32 tokens: "few" at its most
    rows, where the fused step gains least) and remembered under `key`.

    Returns, per kind, its kernels fastest first down to the first that runs any row (`ranked`:
    a step runs on the first of them that can run its rows), and the weight copies those use
    (made only then: they cost memory), or None.

    A single row is a matrix-vector product, bound by reading the weights: on an AMD EPYC
    with native bf16, oneDNN's bf16 path took 17.5 ms for the 0.5B model's vocabulary head
    where torch's own kernel took 7.3, and the whole one-token forward 70 against 41 ms,
    while for 32 rows oneDNN is several times faster (BENCHMARKS.md, "A single stream"); its
    prepacked weights are faster again for a batch (BENCHMARKS.md, "Prepacked weights"); held
    to AVX2, where the model runs in fp32, a bf16 copy reads half the bytes for one row
    (BENCHMARKS.md, "A single stream on an AVX2-only CPU")."""
    import torch

    from coopcode.engines.fused_decode import MAX_ROWS
    from coopcode.engines.weight_copies import WAYS

    known: Any = _remembered(key).get("kernels")
    if _is_ranking(known, options):
        choice = {k: [str(w) for w in known[k]] for k in options}
        used = {w for ways in choice.values() for w in ways} & set(WAYS)
        return choice, make_copies(used) if used else None
    if not torch.backends.mkldnn.is_available():
        return {"one": ["aten"], "many": ["onednn"]}, None
    offered = {w for ways in options.values() for w in ways} & set(WAYS)
    copies = make_copies(offered) if offered else None
    seconds: dict[str, dict[str, float]] = {}
    few = copies.fused.max_rows if copies is not None and copies.fused is not None else MAX_ROWS
    tokens = {"one": 1, "few": few, "many": 32}
    with torch.inference_mode():
        for kind, ways in options.items():
            ids = torch.zeros(1, tokens[kind], dtype=torch.long, device=model.device)
            for way in ways:
                if way in WAYS and (copies is None or way not in copies.ways):
                    continue  # a copy that could not be made here
                forward = (partial(copies.fused.scratch_step, tokens[kind])
                           if way == "fused" and copies is not None
                           else partial(model, input_ids=ids, use_cache=False))
                with on_kernels(way, copies):
                    forward()  # kernel selection, first touch
                    best = float("inf")
                    for _ in range(reps):
                        t0 = time.perf_counter()
                        forward()
                        best = min(best, time.perf_counter() - t0)
                seconds.setdefault(kind, {})[way] = best
    choice = {kind: ranked(times) for kind, times in seconds.items()}
    _remember(key, {"kernels": choice, "seconds": seconds})
    if copies is not None:
        copies.keep({w for ways in choice.values() for w in ways})  # the others' memory goes back
        if not copies.ways:
            copies.remove()
            copies = None
    return choice, copies


# The one kernel that does not run every row: the fused step refuses rows under an adapter it
# cannot apply (`FusedDecoder.runs`).
PARTIAL_WAYS = frozenset({"fused"})


def ranked(seconds: dict[str, float]) -> list[str]:
    """Kernels fastest first, down to the first that runs any row (those after it never run)."""
    order = sorted(seconds, key=seconds.__getitem__)
    general = next((i for i, way in enumerate(order) if way not in PARTIAL_WAYS), len(order) - 1)
    return order[:general + 1]


def _is_ranking(known: Any, options: dict[str, list[str]]) -> bool:
    """Whether `known` (remembered) ranks every kind of `options` from its own ways, each
    ending on one that runs any row (older remembered forms are measured again)."""
    return isinstance(known, dict) and all(
        isinstance(known.get(kind), list) and known[kind]
        and all(way in ways for way in known[kind]) and known[kind][-1] not in PARTIAL_WAYS
        for kind, ways in options.items())


@contextmanager
def on_kernels(way: str, copies: Any = None) -> Iterator[None]:
    """A context in which this thread's matrix products run on `way`'s kernels
    (`choose_kernels`)."""
    with ExitStack() as stack:
        if way in ("aten", "bf16"):
            stack.enter_context(onednn(False))
        if way in ("packed", "bf16") and copies is not None and way in copies.ways:
            stack.enter_context(copies.active(way))
        yield


def without_copies(kernels: dict[str, list[str]]) -> dict[str, list[str]]:
    """`kernels` on the weights as stored wherever they chose a copy (what the engine ran
    before it measured those: the benchmarks' reference): oneDNN for prepacked weights,
    torch's own kernels for a bf16 copy."""
    plain = {"packed": "onednn", "bf16": "aten"}
    return {kind: list(dict.fromkeys(plain.get(w, w) for w in ways)) for kind, ways in kernels.items()}


@contextmanager
def onednn(enabled: bool) -> Iterator[None]:
    """oneDNN (mkldnn) on or off for the matrix products inside (a process-wide switch of
    torch's: a forward in another thread meanwhile runs with the same kernels, slower or
    faster but the same products)."""
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


def pick_device_and_dtype(device: str | None = None, dtype: str | None = None) -> tuple[str, Any]:
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        if device.startswith("cuda"):
            dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        else:
            dtype = measured_cpu_dtype()
    return device, getattr(torch, dtype)


def _contiguous_input(_module: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Forward pre-hook for the LM head: hand it a contiguous hidden state.

    On CPU, a frozen (requires_grad=False) bf16 Linear fed a sliced, non-contiguous input
    builds a transient fp32 copy of its whole weight: for a 151k-token vocabulary ~0.5-1 GB
    per call. PEFT freezes the head, so every forward with an adapter loaded paid it (peak
    RSS 2.7 GB instead of 1.4 GB for the 0.5B model); the copy of one row per sequence that
    `logits_to_keep` slices out is negligible.
    """
    if args and hasattr(args[0], "contiguous"):
        return (args[0].contiguous(), *args[1:])
    return None


class TransformersEngine(Engine):
    """One base model in memory; adapters loaded by name and switched per request group."""

    name = "transformers"

    def __init__(
        self,
        model: ResolvedModel | str | None = None,
        *,
        device: str | None = None,
        dtype: str | None = None,
        max_batch: int = 64,
        kv_cache_gb: float = 4.0,
        deterministic: bool = False,
        progress: Any = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # our own progress line says what is loading
        say = progress or (lambda _m: None)
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, say)
        self.resolved = resolved
        self.model_name = resolved.name
        self.model_fingerprint = resolved.fingerprint
        self.device, self.dtype = pick_device_and_dtype(device, dtype)
        # A format the user chose is the one every product runs in; a measured one may give
        # a single row's products a narrower copy of the weights where that measures faster.
        self.dtype_chosen = dtype is not None
        self.deterministic = deterministic
        self.max_batch = 1 if deterministic else max_batch  # alone: batch-independent arithmetic
        self.kv_cache_gb = kv_cache_gb  # the decode loop admits rows while their cache fits this
        # Samples in flight a scheduler should keep: twice the batch, so rows that finish are
        # replaced at once while other samples wait on the sandbox or on their other agent.
        self.preferred_concurrency = 2 * self.max_batch
        self._batcher: ContinuousBatcher | None = None
        self._batcher_lock = threading.Lock()
        say(f"loading {resolved.name} ({str(self.dtype).replace('torch.', '')}, {self.device}) ...")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(resolved.path)
            self.base = AutoModelForCausalLM.from_pretrained(resolved.path, dtype=self.dtype)
        except (OSError, ValueError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
            raise ModelError(f"cannot load model {resolved.name}: {first}") from None
        self.base.to(self.device).eval()  # type: ignore[arg-type]
        head = self.base.get_output_embeddings()
        if head is not None:
            head.register_forward_pre_hook(_contiguous_input)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.instruct = (
            resolved.instruct if resolved.instruct is not None
            else bool(getattr(self.tokenizer, "chat_template", None))
        )
        self.eos_ids = self._eos_ids()
        self.peft: Any = None  # a PeftModel around `base` once an adapter is loaded
        self._lora: TokenLora | None = None  # its per-token LoRA hooks (the decode loop's)
        # The kernels of the decode loop's forwards per kind, fastest first (`choose_kernels`),
        # the copies of the weights (`weight_copies`) if some of them multiply by those, and
        # the most rows a "few" forward holds (0: that kind is not offered).
        self.kernels = {"one": ["onednn"], "many": ["onednn"]}
        self.few_rows = 0
        self.copies: Any = None
        self._adapters: dict[str, str] = {}
        self._lock = threading.RLock()
        torch.set_grad_enabled(False)
        if self.device == "cpu":
            self._build_fused_step(say)

    # -- adapters ---------------------------------------------------------------------------

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for source in (self.base.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if isinstance(source, int):
                ids.add(source)
            elif source:
                ids.update(source)
        for token in ("<|im_end|>", "<|endoftext|>", "<|eot_id|>"):
            tid = self.tokenizer.convert_tokens_to_ids(token)
            if isinstance(tid, int) and tid != self.tokenizer.unk_token_id and tid is not None:
                ids.add(tid)
        return ids

    def adapters(self) -> dict[str, str]:
        return dict(self._adapters)

    def load_adapter(self, name: str, path: str) -> None:
        from coopcode.core.adapters import check_adapter

        folder = check_adapter(path, self.model_fingerprint, self.model_name)
        with self._lock:
            if self._adapters.get(name) == str(folder):
                return
            try:
                if self.peft is None:
                    from peft import PeftModel

                    self.peft = PeftModel.from_pretrained(self.base, str(folder), adapter_name=name)
                    self.peft.eval()
                else:
                    if name in self._adapters:
                        self.peft.delete_adapter(name)
                    self.peft.load_adapter(str(folder), adapter_name=name)
            except (RuntimeError, ValueError, KeyError) as e:
                msg = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
                if "size mismatch" in str(e) or "shape" in str(e):
                    msg = "its weights do not fit this base model (trained on a different base?)"
                raise ModelError(f"cannot load adapter {path}: {msg}") from None
            self._adapters[name] = str(folder)

    @property
    def net(self) -> Any:
        return self.peft if self.peft is not None else self.base

    # -- adapters trained elsewhere ---------------------------------------------------------

    def attach_adapters(self, peft_model: Any, names: Sequence[str]) -> None:
        """Sample with adapters whose weights live in `peft_model`, a PEFT model around this
        engine's own base (a trainer's, `coopcode.train.policy`): trained in place, they are
        always current here, with no second copy to sync."""
        with self._lock:
            if self.peft is not None and self.peft is not peft_model:
                raise ModelError("this engine already has adapters on another PEFT model")
            self.peft = peft_model
            for name in names:
                self._adapters[name] = "(training)"

    @property
    def adapter_lock(self) -> Any:
        """Held for a whole decode step: adapters must not change under one."""
        return self._lock

    def encode(self, text: str) -> list[int]:
        """Token ids of a rendered prompt, exactly as `generate` tokenizes it."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- generation -------------------------------------------------------------------------

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def submit(self, request: GenerationRequest, on_delta: SampleDelta | None = None) -> Submission:
        return self.submit_all([(request, on_delta)])[0]

    def submit_all(self, requests: Sequence[tuple[GenerationRequest, SampleDelta | None]]
                   ) -> list[Submission]:
        subs = [Submission(r, d) for r, d in requests]
        self.batcher().submit(subs)
        cpu_threads.release()  # this thread now waits on the decode thread: give it the cores
        return subs

    def batcher(self) -> ContinuousBatcher:
        """The decode loop (started on first use)."""
        # Not the engine lock: the decode loop holds that for a whole step, and a scheduler
        # submitting many small requests must not wait a step for each.
        with self._batcher_lock:
            if self._batcher is None:
                self._batcher = self._start_batcher()
            return self._batcher

    def _start_batcher(self) -> ContinuousBatcher:
        cfg = self.base.config
        heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        per_token = 2 * cfg.num_hidden_layers * heads * head_dim * self.base.dtype.itemsize
        register_attention()
        if self.base.config._attn_implementation != ATTENTION:
            self.base.set_attn_implementation(ATTENTION)  # other calls still run plain SDPA
        if self.base.config._attn_implementation != ATTENTION:
            raise ModelError(f"{self.model_name} does not use transformers' attention interface, "
                             "which the embedded engine's batching needs")
        cache = SlotCache(cfg.num_hidden_layers, heads, head_dim, self.base.dtype, self.device)
        if self.device == "cpu":
            options = self._kernel_options()
            key = f"{_cpu_key()} | {self.model_fingerprint} | {self.base.dtype}"
            if "bf16" in options["one"]:
                key += " | bf16 copy"
            if "fused" in options["one"]:  # (its version: an edited kernel is measured again)
                from coopcode.engines import fused_decode

                key += f" | fused {fused_decode.version()}"
            with self.peft.disable_adapter() if self.peft is not None else nullcontext():
                self.kernels, self.copies = choose_kernels(self.base, key, options, self._copier())
            fused = self.copies.fused if self.copies is not None else None
            self.few_rows = fused.max_rows if fused is not None and "few" in options else 0
        return ContinuousBatcher(
            self._flat_forward, self.encode, self.tokenizer, self.eos_ids, self._lock, cache,
            max_batch=self.max_batch, kv_budget_tokens=int(self.kv_cache_gb * 2**30 // per_token),
            pad_id=int(self.tokenizer.pad_token_id))

    def _flat_forward(self, plan: Any, adapters: list[str | None], tokens: list[int],
                      positions: list[int], keep: list[int]) -> Any:
        """One flat forward of the decode loop (`coopcode.engines.flat_step`): each token
        under its own adapter; the logits at the positions in `keep`."""
        import torch

        names = {a for a in adapters if a is not None}
        for name in names:
            if name not in self._adapters:
                raise ModelError(f"adapter {name!r} is not loaded")
        kind = ("one" if len(tokens) == 1 else
                "few" if "few" in self.kernels and not plan.chunks and len(tokens) <= self.few_rows
                else "many")
        fused = self.copies.fused if self.copies is not None else None
        runs_fused = fused is not None and all(fused.runs(name) for name in names)
        kernel = next((way for way in self.kernels[kind] if way != "fused" or runs_fused), "onednn")
        if kernel == "fused" and fused is not None:
            slots = plan.decode_slots or [plan.chunks[0][0]]  # (or one prompt token)
            logits = fused.step(tokens, positions, slots, plan.cache.k, plan.cache.v, adapters)
            return logits[keep]
        inputs = dict(input_ids=torch.tensor([tokens], device=self.device),
                      position_ids=torch.tensor([positions], device=self.device), use_cache=False,
                      logits_to_keep=torch.tensor(keep, dtype=torch.long, device=self.device),
                      coop_step=plan)
        with on_kernels(kernel, self.copies):
            return self._flat_logits(adapters, names, inputs)

    def _kernel_options(self) -> dict[str, list[str]]:
        """The kernels `choose_kernels` may pick from here, per kind of forward: prepacked
        weights where oneDNN can pack this format; for one token the fused step where it runs
        this model, and a bf16 copy where the model runs in a measured fp32 (neither where the
        user asked for fp32: both multiply by bf16 weights); copies of the weights only as far
        as they fit easily in memory (prepacked first: a batch's speed is what benches and
        training wait on)."""
        import torch

        from coopcode.engines import weight_copies

        offered = []
        if weight_copies.can_pack(self.base.dtype):
            offered.append("packed")
        if self._fused_offered():
            offered.append("fused")
        if self.base.dtype == torch.float32 and not self.dtype_chosen:
            offered.append("bf16")
        while offered and not weight_copies.fits(self.base, offered):
            offered.pop()
        many = ["onednn", *(["packed"] if "packed" in offered else [])]
        few = {"few": [*many, "fused"]} if "fused" in offered else {}
        return {"one": ["onednn", "aten", *offered], **few, "many": many}

    def _fused_offered(self) -> bool:
        """Whether the fused step may run this model here: a supported model, and not where
        the user asked for fp32 (it multiplies by bf16 weights)."""
        import torch

        from coopcode.engines.fused_decode import unsupported

        return unsupported(self.base) is None and (
            self.base.dtype == torch.bfloat16 or not self.dtype_chosen)

    def _build_fused_step(self, say: Callable[[str], None]) -> None:
        """Compile the fused step now, while the model loads, if it will be offered and is not
        built on this machine yet (once: ~30 s); the user is told. A failure is kept and said
        where the kernels are (`describe`)."""
        from coopcode.engines import fused_decode

        if self._fused_offered() and not fused_decode.built():
            say("building the fused decode kernel (once per machine, ~30 s) ...")
            try:
                fused_decode.extension()
            except RuntimeError:
                pass  # not offered then (`weight_copies` records why)

    def _copier(self) -> Callable[[set[str]], Any]:
        """What makes copies of the base's linear weights (`coopcode.engines.weight_copies`)
        for a set of ways."""
        from coopcode.engines import weight_copies

        return lambda ways: weight_copies.WeightCopies(self.base, ways, rows=self.max_batch)

    def add_copies(self, ways: set[str]) -> None:
        """Copies of the weights for `ways` as well (`weight_copies`), made or added to those
        the engine keeps, so a kernel measured slower here can still be run (benchmarks and
        tests compare every kernel the engine may choose)."""
        if self.copies is None:
            self.copies = self._copier()(ways)
        else:
            self.copies.add(ways, rows=self.max_batch)

    def _flat_logits(self, adapters: list[str | None], names: set[str], inputs: dict[str, Any]
                     ) -> Any:
        import torch

        if self.peft is None:
            return self.base(**inputs).logits[0]
        lora = self._token_lora()
        if len(names) == 1 and None not in adapters:
            lora.rows = {n: None for n in names}  # one adapter for every token
        else:
            lora.rows = {n: torch.tensor([i for i, a in enumerate(adapters) if a == n],
                                         device=self.device) for n in names}
        try:
            with lora.peft_off():
                return self.base(**inputs).logits[0]
        finally:
            lora.rows = {}

    def _token_lora(self) -> TokenLora:
        """The LoRA hooks of the current PEFT model and adapters (new adapters may wrap new
        layers, so a new set of adapters gets new hooks)."""
        names = tuple(sorted(self._adapters))
        lora = self._lora
        if lora is None or lora.peft is not self.peft or lora.names != names:
            if lora is not None:
                lora.remove()
            lora = self._lora = TokenLora(self.peft, names)
        return lora

    def _forward(self, adapter: str | None, **inputs: Any) -> Any:
        """A plain forward of the model under one adapter (None: the bare base), outside
        the decode loop."""
        if adapter is not None and adapter not in self._adapters:
            raise ModelError(f"adapter {adapter!r} is not loaded")
        if self.peft is None:
            return self.base(**inputs)
        if adapter is None:
            with self.peft.disable_adapter():
                return self.peft(**inputs)
        self.peft.set_adapter(adapter)
        return self.peft(**inputs)

    def describe(self) -> dict[str, object]:
        """The engine's settings; once the decode loop has started on a CPU, also the kernels
        it measured per kind of forward, fastest first (`choose_kernels`), and any it could not make
        here, with the reason."""
        said: dict[str, object] = {"dtype": str(self.dtype).replace("torch.", ""),
                                   "device": self.device, "max_batch": self.max_batch,
                                   "deterministic": self.deterministic}
        if self._batcher is not None and self.device == "cpu":
            said["kernels"] = {kind: list(ways) for kind, ways in self.kernels.items()}
            if self.copies is not None and self.copies.unavailable:
                said["kernels_unavailable"] = dict(self.copies.unavailable)
        return said

    def work_done(self) -> dict[str, int]:
        """Forwards the decode loop has run, the prompt and decode tokens they held, and the
        prompt tokens copied from another row's cache instead."""
        b = self._batcher
        if b is None:
            return {"forwards": 0, "prompt_tokens": 0, "decode_tokens": 0, "reused_tokens": 0}
        return {"forwards": b.steps, "prompt_tokens": b.prompt_tokens,
                "decode_tokens": b.decode_tokens, "reused_tokens": b.reused_tokens}

    def close(self) -> None:
        with self._batcher_lock:
            batcher, self._batcher = self._batcher, None
        if batcher is not None:
            batcher.close()
        super().close()
        if self.copies is not None:
            self.copies.remove()  # a trainer may keep the base: it gets plain layers back
            self.copies = None
        self.peft = None
        self.base = None  # type: ignore[assignment]

