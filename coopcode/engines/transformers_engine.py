"""The default engine: Hugging Face transformers, one base model, LoRA adapters by name.

Helper and main are PEFT adapters on one shared base in memory (two full copies would double
the memory for nothing); a request names its adapter, or none for the bare base. Requests
are grouped by adapter and sampled in batches by our own decode loop over the model's KV
cache, which is where the speed-up over a per-sample `generate` loop comes from:
- on a CPU a decode step for 8 rows costs ~1.4x a step for one (the weights are read once);
- the n samples of a prompt share one prefill of it (its KV cache is copied to the n rows),
  where `generate` on a batch of n copies would run the same prompt through the model n times;
- a row that has finished (EOS, stop string, budget) leaves the batch at once.

Each sample draws from its own random generator, seeded from (params.seed, sample index), so
its random draws do not depend on which batch it landed in. Its *arithmetic* does: matrix
products over a batch of another shape round differently (in bf16 and in fp32), and a token
whose probability sits on a draw's boundary can then flip. So a sample regenerated in another
batch (after a resume, say) is a fair sample with the same seed, but not always the same text.
`deterministic=True` generates every sample alone (prefill and decode at batch size one):
the same seed then gives the same text whatever else is running, at the price of batching.
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


def _nucleus(probs: Any, top_p: Any) -> Any:
    """`probs` (sorted, descending) with 0 past the first token that brings the sum to top_p."""
    import torch

    return probs * ((torch.cumsum(probs, dim=-1) - probs) < top_p)


class _RowSampler:
    """Picks each row's next token with the row's own generator and settings.

    The distribution work (temperature, log-normalizer, top-k prefilter, nucleus cut) is
    done for the whole batch at once; only the draw is per row, from that row's generator,
    so a sample does not depend on its batch.
    """

    def __init__(self, temps: list[float], top_ps: list[float], seeds: list[int]) -> None:
        import torch

        self.temps = torch.tensor(temps, dtype=torch.float32)
        self.top_ps = torch.tensor(top_ps, dtype=torch.float32)
        self.generators = [torch.Generator().manual_seed(s) for s in seeds]

    def pick(self, logits: Any, rows: list[int]) -> list[int]:
        """Next token of each of `rows` (batch row numbers), given their logits [len(rows), V]."""
        import torch

        logits = logits.float().cpu()
        chosen = logits.argmax(dim=-1).tolist()
        idx_rows = torch.tensor(rows)
        temps, top_ps = self.temps[idx_rows], self.top_ps[idx_rows]
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
        for j, row in enumerate(hot.tolist()):
            gen = self.generators[rows[row]]
            if not bool(nucleus[j]) and k < scaled.shape[-1]:  # no nucleus: the whole vocabulary
                p = torch.softmax(scaled[j], dim=0)
                chosen[row] = int(torch.multinomial(p, 1, generator=gen))
            elif bool(short[j]):  # rare: a distribution too flat for the prefilter
                v, ids = torch.sort(scaled[j], descending=True)
                p = _nucleus(torch.exp(v - log_z[j]), top_ps[hot[j]])
                chosen[row] = int(ids[torch.multinomial(p / p.sum(), 1, generator=gen)])
            else:
                p = probs_cut[j]
                chosen[row] = int(idx[j, torch.multinomial(p / p.sum(), 1, generator=gen)])
        return chosen


class _RowStopper:
    """Per-row end of generation: EOS, stop strings, a token budget, cancellation.

    It also streams: after each token it decodes the row's text and reports the delta,
    holding back text that could be the start of a stop string so a stream never shows one.
    """

    def __init__(
        self,
        tokenizer: Any,
        rows: list[tuple[int, int]],
        stops: list[tuple[str, ...]],
        budgets: list[int],
        eos_ids: set[int],
        on_delta: DeltaCallback | None,
    ) -> None:
        self.tok, self.rows = tokenizer, rows
        self.stops, self.budgets, self.eos_ids = stops, budgets, eos_ids
        self.on_delta = on_delta
        n = len(rows)
        self.done = [False] * n
        self.text = [""] * n
        self.emitted = [0] * n  # characters of text streamed
        self.counted = [0] * n  # tokens streamed
        self.ids: list[list[int]] = [[] for _ in range(n)]
        self.reason = ["length"] * n

    def push(self, i: int, token: int) -> bool:
        """Append `token` to row i; True when the row is finished."""
        ids = self.ids[i]
        ids.append(token)
        hit_eos = token in self.eos_ids
        text = self.tok.decode(ids[:-1] if hit_eos else ids, skip_special_tokens=True)
        self.text[i] = text
        cut = self._stop_at(i, text)
        if cut is not None:
            self.text[i] = text[:cut]
            self.finish(i, "stop")
        elif hit_eos:
            self.finish(i, "stop")
        elif len(ids) >= self.budgets[i]:
            self.finish(i, "length")
        else:
            self._emit(i, final=False)
        return self.done[i]

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
                    if text.endswith(s[:k], 0, safe):
                        safe -= k
                        break
        tokens = len(self.ids[i]) - self.counted[i]
        if safe > self.emitted[i] or (final and tokens > 0):
            delta = text[self.emitted[i]:safe]
            self.emitted[i], self.counted[i] = safe, len(self.ids[i])
            if self.on_delta is not None:
                req, sample = self.rows[i]
                self.on_delta(req, sample, delta, tokens)

    def finish(self, i: int, reason: str) -> None:
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
        self.deterministic = deterministic
        self.max_batch = 1 if deterministic else max_batch  # alone: batch-independent arithmetic
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
        """Sample the rows of `batch` together with our own decode loop.

        Rows that share a prompt (the n samples of a request) share its prefill: each distinct
        prompt is run through the model once and its KV cache is copied to its rows. Finished
        rows leave the batch, so the rest step at the cost of a smaller batch.
        """
        import torch

        started = time.time()
        params = [requests[ri].params for ri, _ in batch]
        sampler = _RowSampler([p.temperature for p in params], [p.top_p for p in params],
                              [derive_seed(p.seed, si) for p, (_, si) in zip(params, batch)])
        stopper = _RowStopper(self.tokenizer, batch, [p.stop for p in params],
                              [p.max_new_tokens for p in params], self.eos_ids, on_delta)
        prompts = [requests[ri].prompt for ri, _ in batch]
        distinct = list(dict.fromkeys(prompts))
        enc = self.tokenizer(distinct, return_tensors="pt", padding=True,
                             add_special_tokens=False).to(self.device)
        mask = enc["attention_mask"]
        with torch.inference_mode():
            out = self.net(input_ids=enc["input_ids"], attention_mask=mask,
                           position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
                           use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            rows_of = [distinct.index(p) for p in prompts]
            which = torch.tensor(rows_of, device=self.device)
            if rows_of != list(range(len(distinct))):
                cache.batch_select_indices(which)
            mask = mask[which]
            logits = out.logits[which, -1]
            alive = list(range(len(batch)))
            while alive:
                if cancel is not None and cancel.is_set():
                    for i in alive:
                        stopper.finish(i, "cancelled")
                    break
                tokens = sampler.pick(logits, alive)
                keep = [j for j, (i, t) in enumerate(zip(alive, tokens)) if not stopper.push(i, t)]
                if not keep:
                    break
                if len(keep) < len(alive):
                    kept = torch.tensor(keep, device=self.device)
                    cache.batch_select_indices(kept)
                    mask = mask[kept]
                    alive = [alive[j] for j in keep]
                    tokens = [tokens[j] for j in keep]
                mask = torch.cat([mask, mask.new_ones((len(alive), 1))], dim=1)
                out = self.net(input_ids=torch.tensor(tokens, device=self.device)[:, None],
                               attention_mask=mask, position_ids=mask.sum(-1, keepdim=True) - 1,
                               past_key_values=cache, use_cache=True)
                cache = out.past_key_values
                logits = out.logits[:, -1]
        seconds = time.time() - started
        return [
            Completion(text=stopper.text[i], n_tokens=len(stopper.ids[i]),
                       finish_reason=stopper.reason[i], token_ids=stopper.ids[i], seconds=seconds)
            for i in range(len(batch))
        ]

    def close(self) -> None:
        self.peft = None
        self.base = None  # type: ignore[assignment]

