"""vLLM engine for GPU machines: one `LLM` with multi-LoRA, an adapter per request.

vLLM's wheels are CUDA builds with their own torch pin, so it is an optional extra
(`pip install coopcode[vllm]`), imported only here, only when asked for. vLLM's offline API
does not stream: each sample's text is reported as one delta when its batch finishes.
Past one machine, run `vllm serve --enable-lora` and point an OpenAI-compatible engine at it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from coopcode.engines.base import Completion, DeltaCallback, Engine, GenerationRequest, derive_seed
from coopcode.errors import ModelError
from coopcode.models import ResolvedModel, resolve_model


class VLLMEngine(Engine):
    name = "vllm"

    def __init__(
        self,
        model: ResolvedModel | str | None = None,
        *,
        dtype: str | None = None,
        max_lora_rank: int = 64,
        tensor_parallel_size: int = 1,
        progress: Any = None,
        **_ignored: Any,
    ) -> None:
        try:
            from vllm import LLM
        except ImportError:
            raise ModelError("the vllm engine needs vLLM on a CUDA machine: pip install 'coopcode[vllm]'") from None
        say = progress or (lambda _m: None)
        resolved = model if isinstance(model, ResolvedModel) else resolve_model(model, say)
        self.model_name, self.model_fingerprint = resolved.name, resolved.fingerprint
        say(f"starting vLLM for {resolved.name} ...")
        self.llm = LLM(model=resolved.path, dtype=dtype or "auto", enable_lora=True, max_loras=2,
                       max_lora_rank=max_lora_rank, tensor_parallel_size=tensor_parallel_size)
        self.tokenizer = self.llm.get_tokenizer()
        self.instruct = resolved.instruct if resolved.instruct is not None else bool(
            getattr(self.tokenizer, "chat_template", None))
        self._adapters: dict[str, tuple[int, str]] = {}

    def render_chat(self, messages: list[dict[str, str]]) -> str:
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))

    def load_adapter(self, name: str, path: str) -> None:
        from coopcode.adapters import check_adapter

        folder = check_adapter(path, self.model_fingerprint, self.model_name)
        self._adapters[name] = (len(self._adapters) + 1, str(folder))

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
            results[ri].append(Completion(text=o.text, n_tokens=len(o.token_ids),
                                          finish_reason="length" if o.finish_reason == "length" else "stop",
                                          token_ids=list(o.token_ids), seconds=seconds))
        return results
