"""The trainable policy: LoRA adapters on a transformers causal LM, apart from any engine.

What a trainer needs of the model, and nothing else: attach an adapter (fresh, or from a
saved folder), its parameters for the optimizer, the log-probs of completions under an
adapter (or under the bare base, for the KL), and saving / loading an adapter's weights.

Where rollouts are sampled by the embedded engine, the policy *shares* the engine's model
(`TransformersPolicy.sharing(engine)`): the adapters are trained in place and the engine
samples with the current weights, with no second copy to keep in sync. Where a separate
engine samples (vLLM in-process, a `vllm serve` fleet), the policy loads its own copy
(`TransformersPolicy.load`) and the trainer hands the engine new adapter weights after each
optimizer step. Either way the log-probs in the loss are the policy's own, so the update is
exact whatever sampled the text.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from coopcode.core.errors import ModelError

if TYPE_CHECKING:
    import torch
    from peft import LoraConfig, PeftModel
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from coopcode.core.events import Say
    from coopcode.engines import Engine
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.training.logprobs import TokenLogprobs


class TransformersPolicy:
    """LoRA adapters, trained in place, on one transformers base model."""

    def __init__(self, base: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, *,
                 model_name: str, model_fingerprint: str,
                 engine: TransformersEngine | None = None,
                 lock: threading.RLock | None = None) -> None:
        self.base, self.tokenizer = base, tokenizer
        self.model_name, self.model_fingerprint = model_name, model_fingerprint
        self.engine = engine  # the engine sharing this model, told of every adapter
        # The PEFT model around `base`, made with the first adapter (or the engine's already).
        self.peft: PeftModel | None = engine.peft if engine is not None else None
        self.lock = lock or threading.RLock()  # the engine's: no adapter change mid-step
        self.names: list[str] = []

    @classmethod
    def sharing(cls, engine: Engine) -> TransformersPolicy:
        """Train on the embedded engine's own model (it samples with the current weights)."""
        from coopcode.engines.embedded.engine import TransformersEngine

        if not isinstance(engine, TransformersEngine):
            raise ValueError(f"the {engine.name} engine has no model to train in place: give "
                             "the trainer a policy of its own (TransformersPolicy.load)")
        return cls(engine.base, engine.tokenizer, model_name=engine.model_name,
                   model_fingerprint=engine.model_fingerprint, engine=engine,
                   lock=engine.adapter_lock)

    @classmethod
    def load(cls, model: str | None, *, dtype: str | None = None, device: str | None = None,
             progress: Say | None = None) -> TransformersPolicy:
        """A copy of the model for training only (another engine samples)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from coopcode.engines.embedded.cpu_format import pick_device_and_dtype
        from coopcode.models import resolve_model

        say = progress or (lambda _m: None)
        resolved = resolve_model(model, say)
        device, torch_dtype = pick_device_and_dtype(device, dtype)
        say(f"loading {resolved.name} for training ({str(torch_dtype).replace('torch.', '')}) ...")
        base = AutoModelForCausalLM.from_pretrained(resolved.path, dtype=torch_dtype)
        base.to(device)  # type: ignore[arg-type]
        base.eval()
        return cls(base, AutoTokenizer.from_pretrained(resolved.path), model_name=resolved.name,
                   model_fingerprint=resolved.fingerprint)

    # -- adapters ---------------------------------------------------------------------------

    def add_adapter(self, name: str, lora_config: LoraConfig | None = None, *,
                    weights: str | None = None) -> list[torch.nn.Parameter]:
        """Attach LoRA adapter `name`: fresh from `lora_config`, or starting from the PEFT
        folder `weights` (checked against this base). Returns its parameters in float32
        (Adam steps of ~1e-5 vanish in bf16)."""
        import torch
        from peft import LoraConfig, get_peft_model

        if weights is not None:
            from coopcode.core.adapters import check_adapter

            folder = check_adapter(weights, self.model_fingerprint, self.model_name)
            lora_config = LoraConfig.from_pretrained(str(folder))
            lora_config.inference_mode = False
            # The folder names the base as the run that saved it did (a catalog name); the
            # fingerprint above proved it is this base, so PEFT need not warn it was renamed.
            lora_config.base_model_name_or_path = getattr(self.base, "name_or_path", None)
        if lora_config is None:
            raise ValueError(f"adapter {name!r}: a fresh adapter needs its LoraConfig")
        with self.lock:
            if name in self.names or (self.engine is not None and name in self.engine.adapters()):
                raise ModelError(f"adapter {name!r} is already loaded")
            if self.peft is None:
                from coopcode.engines.embedded.engine import quiet_peft

                with quiet_peft():
                    self.peft = get_peft_model(self.base, lora_config, adapter_name=name)
            else:
                self.peft.add_adapter(name, lora_config)
            self.peft.eval()  # no dropout: the update scores the policy that sampled
            self.names.append(name)
            params = self.parameters(name)
            for p in params:
                p.data = p.data.to(torch.float32)
            if weights is not None:
                self.load_weights(name, weights)
            if self.engine is not None:
                self.engine.attach_adapters(self.peft, [name])
        return params

    @property
    def model(self) -> PeftModel:
        """The PEFT model around the base: there once an adapter is attached."""
        if self.peft is None:
            raise ModelError("no adapter is attached to the policy yet (add_adapter first)")
        return self.peft

    def parameters(self, name: str) -> list[torch.nn.Parameter]:
        """The LoRA weights of adapter `name` (for an optimizer)."""
        marker = f".{name}."
        return [p for n, p in self.model.named_parameters() if "lora_" in n and marker in n]

    def load_weights(self, name: str, folder: str | Path) -> None:
        """Overwrite adapter `name`'s weights with those saved in `folder`."""
        from peft import set_peft_model_state_dict
        from safetensors.torch import load_file

        state = load_file(str(Path(folder) / "adapter_model.safetensors"))
        with self.lock:
            result = set_peft_model_state_dict(self.model, state, adapter_name=name)
        unexpected = getattr(result, "unexpected_keys", []) or []
        if any("lora_" in k for k in unexpected):
            raise ModelError(f"adapter {folder}: its weights do not fit adapter {name!r}")

    def save(self, name: str, folder: str | Path) -> Path:
        """Write adapter `name` as a standard PEFT folder (adapter_config.json + safetensors),
        which PeftModel.from_pretrained and vLLM's LoRA loader read."""
        from peft import get_peft_model_state_dict
        from safetensors.torch import save_file

        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        with self.lock:
            state = get_peft_model_state_dict(self.model, adapter_name=name)
            config = copy.deepcopy(self.model.peft_config[name])
        config.inference_mode = True  # what PeftModel.save_pretrained records
        config.base_model_name_or_path = self.model_name
        config.save_pretrained(str(out))
        save_file({k: v.detach().contiguous().cpu() for k, v in state.items()},
                  str(out / "adapter_model.safetensors"), metadata={"format": "pt"})
        return out

    # -- the numbers the loss needs -----------------------------------------------------------

    def select(self, name: str) -> None:
        """Make adapter `name` the active and only trainable one (PEFT's set_adapter)."""
        self.model.set_adapter(name)

    def logprobs(self, name: str | None, prompts: Sequence[Sequence[int]],
                 completions: Sequence[Sequence[int]], *, temperature: float = 1.0
                 ) -> TokenLogprobs:
        """Token log-probs of the completions under adapter `name` (None: the bare base),
        differentiable in the adapter's weights when grad is enabled."""
        from coopcode.training.logprobs import completion_logprobs

        context = self.model.disable_adapter() if name is None else nullcontext()
        if name is not None:
            self.select(name)
        with context:
            return completion_logprobs(self.base, prompts, completions, temperature=temperature)

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
