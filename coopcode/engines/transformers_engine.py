"""The default engine: Hugging Face transformers, one base model, LoRA adapters by name.

Helper and main are PEFT adapters on one shared base in memory (two full copies would double
the memory for nothing); a request names its adapter, or none for the bare base. Requests
are grouped by adapter and sampled in batches: on a CPU, a batch of 8 costs little more per
step than a batch of 1, which is where the speed-up over a per-sample loop comes from.

Sampling is done by our own logits processor with one random generator per sample, seeded
from (params.seed, sample index): a sample does not depend on which batch it landed in, so a
resumed run regenerates the samples an uninterrupted run would have produced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from coopcode.engines.base import (
    Completion,
    DeltaCallback,
    Engine,
    GenerationRequest,
    derive_seed,
)
from coopcode.errors import ModelError
from coopcode.models import ResolvedModel, resolve_model

TOP_K_PREFILTER = 256  # nucleus sampling looks here first; falls back to a full sort if short


def cpu_has_bf16() -> bool:
    """bf16 is 2-3x faster than fp32 for generation on CPUs with native bf16 instructions."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(f in flags for f in ("avx512_bf16", "amx_bf16"))


def pick_device_and_dtype(device: str | None = None, dtype: str | None = None) -> tuple[str, Any]:
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        if device.startswith("cuda"):
            dtype = "bfloat16" if torch.cuda.is_bf16_supported() else "float16"
        else:
            dtype = "bfloat16" if cpu_has_bf16() else "float32"
    return device, getattr(torch, dtype)


class _RowSampler:
    """A logits processor that samples each row with its own generator and settings.

    It returns scores that are -inf everywhere but the chosen token, so generate()'s greedy
    step picks exactly our sample.
    """

    def __init__(self, temps: list[float], top_ps: list[float], seeds: list[int]) -> None:
        import torch

        self.temps, self.top_ps = temps, top_ps
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        scores = scores.float()
        choice = torch.empty(scores.shape[0], dtype=torch.long, device=scores.device)
        for i in range(scores.shape[0]):
            choice[i] = self._pick(scores[i], i)
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(scores.shape[0]), choice] = 0.0
        return out

    def _pick(self, logits: Any, row: int) -> int:
        import torch

        temp, top_p, gen = self.temps[row], self.top_ps[row], self.generators[row]
        if temp <= 0:
            return int(logits.argmax())
        logits = logits.cpu() / temp
        log_z = torch.logsumexp(logits, dim=0)
        k = min(TOP_K_PREFILTER, logits.shape[0])
        vals, idx = torch.topk(logits, k)
        probs = torch.exp(vals - log_z)
        if top_p < 1.0 and float(probs.sum()) < top_p:
            vals, idx = torch.sort(logits, descending=True)  # rare: a very flat distribution
            probs = torch.exp(vals - log_z)
        if top_p < 1.0:
            keep = (torch.cumsum(probs, 0) - probs) < top_p
            probs = probs * keep
        elif k < logits.shape[0]:
            probs = torch.softmax(logits, dim=0)
            idx = torch.arange(logits.shape[0])
        pick = torch.multinomial(probs / probs.sum(), 1, generator=gen)
        return int(idx[pick])


class _RowStopper:
    """Stopping criteria per row: EOS, stop strings, a per-row token budget, cancellation.

    It also streams: each step it decodes the rows' new text and reports the delta, holding
    back text that could be the start of a stop string so a stream never shows one.
    """

    def __init__(
        self,
        tokenizer: Any,
        prompt_len: int,
        rows: list[tuple[int, int]],
        stops: list[tuple[str, ...]],
        budgets: list[int],
        eos_ids: set[int],
        on_delta: DeltaCallback | None,
        cancel: threading.Event | None,
    ) -> None:
        self.tok, self.prompt_len, self.rows = tokenizer, prompt_len, rows
        self.stops, self.budgets, self.eos_ids = stops, budgets, eos_ids
        self.on_delta, self.cancel = on_delta, cancel
        n = len(rows)
        self.done = [False] * n
        self.text = [""] * n
        self.emitted = [0] * n
        self.ids: list[list[int]] = [[] for _ in range(n)]
        self.reason = ["length"] * n

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        cancelled = self.cancel is not None and self.cancel.is_set()
        for i in range(len(self.rows)):
            if self.done[i]:
                continue
            if cancelled:
                self._finish(i, "cancelled")
                continue
            ids = input_ids[i, self.prompt_len:].tolist()
            self.ids[i] = ids
            last = ids[-1] if ids else None
            hit_eos = last in self.eos_ids
            text = self.tok.decode(ids[:-1] if hit_eos else ids, skip_special_tokens=True)
            self.text[i] = text
            cut = self._stop_at(i, text)
            if cut is not None:
                self.text[i] = text[:cut]
                self._finish(i, "stop")
            elif hit_eos:
                self._finish(i, "stop")
            elif len(ids) >= self.budgets[i]:
                self._finish(i, "length")
            else:
                self._emit(i, final=False)
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)

    def _stop_at(self, i: int, text: str) -> int | None:
        # Only the tail can hold a new stop string: search from just before the last emission.
        start = max(0, self.emitted[i] - max((len(s) for s in self.stops[i]), default=0))
        hits = [p for s in self.stops[i] if (p := text.find(s, start)) >= 0]
        return min(hits) if hits else None

    def _emit(self, i: int, final: bool) -> None:
        text = self.text[i]
        safe = len(text)
        if not final:
            if text.endswith("\ufffd"):  # an incomplete multi-byte character
                safe = len(text.rstrip("\ufffd"))
            for s in self.stops[i]:
                for k in range(min(len(s) - 1, safe), 0, -1):
                    if text[:safe].endswith(s[:k]):
                        safe = min(safe, len(text[:safe]) - k)
                        break
        if safe > self.emitted[i]:
            delta = text[self.emitted[i]:safe]
            self.emitted[i] = safe
            if self.on_delta is not None:
                req, sample = self.rows[i]
                self.on_delta(req, sample, delta)

    def _finish(self, i: int, reason: str) -> None:
        self.done[i] = True
        self.reason[i] = reason
        self._emit(i, final=True)


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
        max_batch: int = 16,
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
        self.max_batch = max_batch
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
        self._adapters: dict[str, str] = {}
        self._lock = threading.RLock()
        torch.set_grad_enabled(False)

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
        from coopcode.adapters import check_adapter

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

    def _use(self, adapter: str | None) -> Any:
        """Select `adapter` (or the bare base) and return a context to generate in."""
        if adapter is None:
            return self.peft.disable_adapter() if self.peft is not None else nullcontext()
        if adapter not in self._adapters:
            raise ModelError(f"adapter {adapter!r} is not loaded")
        self.peft.set_adapter(adapter)
        return nullcontext()

    @property
    def net(self) -> Any:
        return self.peft if self.peft is not None else self.base

    # -- training (coopcode.train) ----------------------------------------------------------

    def add_trainable_adapter(self, name: str, lora_config: Any = None, *,
                              weights: str | None = None) -> list[Any]:
        """Attach LoRA adapter `name` whose weights a trainer updates in place.

        Sampling with adapter=`name` then uses the current policy: there is no second copy
        of the model to keep in sync. The adapter is fresh from `lora_config`, or starts
        from the PEFT folder `weights` (checked against this base). Its parameters are
        returned in float32 (Adam steps of ~1e-5 vanish in bf16).
        """
        import torch
        from peft import LoraConfig, get_peft_model

        if weights is not None:
            from coopcode.adapters import check_adapter

            folder = check_adapter(weights, self.model_fingerprint, self.model_name)
            lora_config = LoraConfig.from_pretrained(str(folder))
            lora_config.inference_mode = False
        with self._lock:
            if name in self._adapters:
                raise ModelError(f"adapter {name!r} is already loaded")
            if self.peft is None:
                self.peft = get_peft_model(self.base, lora_config, adapter_name=name)
            else:
                self.peft.add_adapter(name, lora_config)
            self.peft.eval()  # no dropout: the update scores the policy that sampled
            self._adapters[name] = "(training)"
            params = self.adapter_parameters(name)
            for p in params:
                p.data = p.data.to(torch.float32)
            if weights is not None:
                self.load_adapter_weights(name, weights)
        return params

    def adapter_parameters(self, name: str) -> list[Any]:
        """The LoRA weights of adapter `name` (for an optimizer)."""
        marker = f".{name}."
        return [p for n, p in self.peft.named_parameters() if "lora_" in n and marker in n]

    def load_adapter_weights(self, name: str, folder: str) -> None:
        """Overwrite trainable adapter `name`'s weights with those saved in `folder`."""
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        state = load_file(str(Path(folder) / "adapter_model.safetensors"))
        with self._lock:
            result = set_peft_model_state_dict(self.peft, state, adapter_name=name)
        unexpected = getattr(result, "unexpected_keys", []) or []
        if any("lora_" in k for k in unexpected):
            raise ModelError(f"adapter {folder}: its weights do not fit adapter {name!r}")

    def save_adapter(self, name: str, folder: str | Path) -> Path:
        """Write adapter `name` as a standard PEFT folder (adapter_config.json + safetensors)."""
        import copy

        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        with self._lock:
            state = get_peft_model_state_dict(self.peft, adapter_name=name)
            config = copy.deepcopy(self.peft.peft_config[name])
        config.inference_mode = True  # what PeftModel.save_pretrained records
        config.base_model_name_or_path = self.model_name
        config.save_pretrained(str(out))
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()},
                  str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
        return out

    def encode(self, text: str) -> list[int]:
        """Token ids of a rendered prompt, exactly as `generate` tokenizes it."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    # -- generation -------------------------------------------------------------------------

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False,
                                                      add_generation_prompt=True))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[list[Completion]]:
        results: list[list[Completion | None]] = [[None] * r.params.n for r in requests]
        rows = [(ri, si) for ri, r in enumerate(requests) for si in range(r.params.n)]
        by_adapter: dict[str | None, list[tuple[int, int]]] = {}
        for row in rows:
            by_adapter.setdefault(requests[row[0]].adapter, []).append(row)
        with self._lock:
            for adapter, group in by_adapter.items():
                # Similar lengths together: less padding per batch.
                group.sort(key=lambda r: (len(requests[r[0]].prompt), r))
                with self._use(adapter):
                    for start in range(0, len(group), self.max_batch):
                        batch = group[start:start + self.max_batch]
                        for (ri, si), c in zip(batch, self._generate_batch(requests, batch,
                                                                           on_delta, cancel)):
                            results[ri][si] = c
        return [[c for c in per if c is not None] for per in results]

    def _generate_batch(
        self,
        requests: Sequence[GenerationRequest],
        batch: list[tuple[int, int]],
        on_delta: DeltaCallback | None,
        cancel: threading.Event | None,
    ) -> list[Completion]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        started = time.time()
        params = [requests[ri].params for ri, _ in batch]
        enc = self.tokenizer([requests[ri].prompt for ri, _ in batch], return_tensors="pt",
                             padding=True, add_special_tokens=False).to(self.device)
        prompt_len = enc["input_ids"].shape[1]
        sampler = _RowSampler([p.temperature for p in params], [p.top_p for p in params],
                              [derive_seed(p.seed, si) for p, (_, si) in zip(params, batch)])
        stopper = _RowStopper(self.tokenizer, prompt_len, batch, [p.stop for p in params],
                              [p.max_new_tokens for p in params], self.eos_ids, on_delta, cancel)
        config = GenerationConfig(
            max_new_tokens=max(p.max_new_tokens for p in params),
            do_sample=False,  # our sampler has already chosen; greedy just takes its choice
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=sorted(self.eos_ids),
        )
        with torch.inference_mode():
            out = self.net.generate(
                **enc,
                generation_config=config,
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=StoppingCriteriaList([stopper]),
            )
        seconds = time.time() - started
        completions = []
        for i in range(len(batch)):
            if not stopper.done[i]:  # generate() ran out of tokens before our check saw it
                ids = out[i, prompt_len:].tolist()
                stopper.ids[i] = [t for t in ids if t != self.tokenizer.pad_token_id]
                stopper.text[i] = str(self.tokenizer.decode(stopper.ids[i], skip_special_tokens=True))
                stopper._finish(i, "length")
            ids = stopper.ids[i]
            completions.append(Completion(
                text=stopper.text[i],
                n_tokens=len(ids),
                finish_reason=stopper.reason[i],
                token_ids=ids,
                seconds=seconds,
            ))
        return completions

    def close(self) -> None:
        self.peft = None
        self.base = None  # type: ignore[assignment]

