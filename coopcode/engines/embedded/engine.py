"""The default engine: Hugging Face transformers, one base model, LoRA adapters by name.

Helper and main are PEFT adapters on one shared base in memory (two full copies would double
the memory for nothing); a request names its adapter, or none for the bare base. Requests go
into a continuously batched loop (`batching`) whose every forward is one
flat sequence (`flat_step`):
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
  this machine and model (`kernels.choose_kernels`: oneDNN's, torch's own, oneDNN's on
  prepacked weights, for one token of an fp32 model a bf16 copy of the weights:
  `kernel_weights`, or for decoding rows the whole step in one compiled call:
  `fused_decode`), and threads that wait on the decode loop give their CPU workers back
  (`cpu_threads`).

One step's life, and the hooks it passes through: docs/design/embedded-engine.md.

Each sample draws from its own random generator, seeded from (params.seed, sample index), so
its random draws do not depend on which batch it landed in. Its *arithmetic* does: matrix
products over a batch of another shape round differently (in bf16 and in fp32), and a token
whose probability sits on a draw's boundary can then flip. So a sample regenerated in another
batch (after a resume, say) is a fair sample with the same seed, but not always the same text.
`deterministic=True` generates every sample alone (prefill and decode at batch size one):
the same seed then gives the same text whatever else is running, at the price of batching.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from typing import Any

from coopcode.core.errors import ModelError
from coopcode.engines.base import Engine, GenerationRequest, SampleDelta, Submission
from coopcode.engines.embedded import cpu_threads, kernels
from coopcode.engines.embedded.batching import ContinuousBatcher
from coopcode.engines.embedded.cpu_format import pick_device_and_dtype
from coopcode.engines.embedded.flat_step import (
    SlotCache,
    StepPlan,
    TokenLora,
    route_attention_to_slots,
)
from coopcode.engines.embedded.kernels import ForwardKind, Kernel, Ranking
from coopcode.models import ResolvedModel, resolve_model


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
            head.register_forward_pre_hook(_contiguous_input)  # hook "contiguous head input"
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
        # The kernels of the decode loop's forwards per kind, fastest first
        # (`kernels.choose_kernels`), what some of them multiply by (`kernel_weights`: copies
        # of the weights, the fused step), and the most rows a FEW forward holds (0: that kind
        # is not offered).
        self.kernels: Ranking = {ForwardKind.ONE: [Kernel.ONEDNN], ForwardKind.MANY: [Kernel.ONEDNN]}
        self.few_rows = 0
        self.kernel_weights: Any = None
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
                with quiet_peft():
                    if self.peft is None:
                        from peft import PeftModel

                        self.peft = PeftModel.from_pretrained(self.base, str(folder),
                                                              adapter_name=name)
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

    # -- adapters trained elsewhere ---------------------------------------------------------

    def attach_adapters(self, peft_model: Any, names: Sequence[str]) -> None:
        """Sample with adapters whose weights live in `peft_model`, a PEFT model around this
        engine's own base (a trainer's, `coopcode.training.policy`): trained in place, they are
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
        if not route_attention_to_slots(self.base):  # hook "slot attention"
            raise ModelError(f"{self.model_name} does not use transformers' attention interface, "
                             "which the embedded engine's batching needs")
        cache = SlotCache(cfg.num_hidden_layers, heads, head_dim, self.base.dtype, self.device)
        if self.device == "cpu":
            options = self._kernel_options()
            key = kernels.measurement_key(self.base, self.model_fingerprint, options)
            with self.peft.disable_adapter() if self.peft is not None else nullcontext():
                self.kernels, few_rows, self.kernel_weights = kernels.choose_kernels(
                    self.base, key, options, self._weights_maker())
            fused = self.kernel_weights.fused if self.kernel_weights is not None else None
            self.few_rows = (min(few_rows or fused.max_rows, fused.max_rows)
                             if fused is not None and ForwardKind.FEW in options else 0)
        return ContinuousBatcher(
            self._flat_forward, self.encode, self.tokenizer, self.eos_ids, self._lock, cache,
            max_batch=self.max_batch, kv_budget_tokens=int(self.kv_cache_gb * 2**30 // per_token),
            pad_id=int(self.tokenizer.pad_token_id))

    def _flat_forward(self, plan: StepPlan, adapters: list[str | None], tokens: list[int],
                      positions: list[int], keep: list[int]) -> Any:
        """One flat forward of the decode loop (`flat_step`): each token under its own
        adapter, on the kernel measured fastest for its kind (`kernels`); the logits at the
        positions in `keep`."""
        import torch

        names = {a for a in adapters if a is not None}
        for name in names:
            if name not in self._adapters:
                raise ModelError(f"adapter {name!r} is not loaded")
        kind = kernels.forward_kind(len(tokens), bool(plan.chunks), self.kernels, self.few_rows)
        fused = self.kernel_weights.fused if self.kernel_weights is not None else None
        runs_fused = fused is not None and all(fused.runs(name) for name in names)
        kernel = next((way for way in self.kernels[kind] if way != Kernel.FUSED or runs_fused),
                      Kernel.ONEDNN)
        if kernel == Kernel.FUSED and fused is not None:
            slots = plan.decode_slots or [plan.chunks[0][0]]  # (or one prompt token)
            logits = fused.step(tokens, positions, slots, plan.cache.k, plan.cache.v, adapters)
            return logits[keep]
        # Hook "step plan": transformers hands a keyword the model does not know on to the
        # attention function, here `flat_step.slot_attention` (`route_attention_to_slots`).
        inputs = dict(input_ids=torch.tensor([tokens], device=self.device),
                      position_ids=torch.tensor([positions], device=self.device), use_cache=False,
                      logits_to_keep=torch.tensor(keep, dtype=torch.long, device=self.device),
                      coop_step=plan)
        with kernels.on_kernels(kernel, self.kernel_weights):
            return self._flat_logits(adapters, names, inputs)

    def _kernel_options(self) -> Ranking:
        """The kernels `kernels.choose_kernels` may pick from here, per kind of forward
        (`kernels.offered`)."""
        return kernels.offered(self.base, self.dtype_chosen)

    def _build_fused_step(self, say: Callable[[str], None]) -> None:
        """Compile the fused step now, while the model loads, if it will be offered and is not
        built on this machine yet (once: ~30 s); the user is told. A failure is kept and said
        where the kernels are (`describe`)."""
        from coopcode.engines.embedded import fused_decode

        if kernels.fused_offered(self.base, self.dtype_chosen) and not fused_decode.built():
            say("building the fused decode kernel (once per machine, ~30 s) ...")
            try:
                fused_decode.extension()
            except RuntimeError:
                pass  # not offered then (`kernel_weights` records why)

    def _weights_maker(self) -> Callable[[set[Kernel]], Any]:
        """What makes the weights a set of kernels multiply by (`kernel_weights`)."""
        from coopcode.engines.embedded.kernel_weights import KernelWeights

        return lambda ways: KernelWeights(self.base, ways, rows=self.max_batch)

    def add_copies(self, ways: set[Kernel]) -> None:
        """The weights of kernels `ways` as well (`kernel_weights`), made or added to those
        the engine keeps, so a kernel measured slower here can still be run (benchmarks and
        tests compare every kernel the engine may choose)."""
        if self.kernel_weights is None:
            self.kernel_weights = self._weights_maker()(ways)
        else:
            self.kernel_weights.add(ways, rows=self.max_batch)
        fused = self.kernel_weights.fused
        if fused is not None and ForwardKind.FEW in self._kernel_options():
            self.few_rows = fused.max_rows  # (measured slower, the FEW kind had no fused step)

    def _flat_logits(self, adapters: list[str | None], names: set[str], inputs: dict[str, Any]
                     ) -> Any:
        import torch

        if self.peft is None:
            return self.base(**inputs).logits[0]
        # Hook "token LoRA": PEFT's own delta is switched off for the pass (`peft_off`) and
        # `TokenLora`'s forward hooks on the LoRA layers add each adapter's delta to its tokens.
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

    def describe(self) -> dict[str, object]:
        """The engine's settings; once the decode loop has started on a CPU, also the kernels
        it measured per kind of forward, fastest first (`kernels.choose_kernels`), and any it could
        not make here, with the reason."""
        said: dict[str, object] = {"dtype": str(self.dtype).replace("torch.", ""),
                                   "device": self.device, "max_batch": self.max_batch,
                                   "deterministic": self.deterministic}
        if self._batcher is not None and self.device == "cpu":
            said["kernels"] = {str(kind): [str(w) for w in ways] for kind, ways in self.kernels.items()}
            if self.kernel_weights is not None and self.kernel_weights.unavailable:
                said["kernels_unavailable"] = dict(self.kernel_weights.unavailable)
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
        if self.kernel_weights is not None:
            self.kernel_weights.remove()  # a trainer may keep the base: it gets plain layers back
            self.kernel_weights = None
        self.peft = None
        self.base = None  # type: ignore[assignment]


@contextlib.contextmanager
def quiet_peft() -> Iterator[None]:
    """PEFT asks the base model `is_gradient_checkpointing`, which transformers 5 deprecates:
    a FutureWarning on every adapter load that no user can act on. Only that warning is
    silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*",
                                category=FutureWarning)
        yield
