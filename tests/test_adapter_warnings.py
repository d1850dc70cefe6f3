"""Loading adapters says nothing a user cannot act on (issue 42: a transformers
FutureWarning, `is_gradient_checkpointing` is deprecated, printed on every adapter load)."""

from __future__ import annotations

import warnings
from pathlib import Path

from coopcode.engines.embedded.engine import TransformersEngine


def test_loading_and_training_adapters_raises_no_future_warning(tiny_model_dir: Path,
                                                                  tmp_path: Path) -> None:
    from peft import LoraConfig

    from coopcode.training.policy import TransformersPolicy

    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=2)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            policy = TransformersPolicy.sharing(engine)  # a trainer's: a fresh adapter
            policy.add_adapter("helper", LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
            saved = policy.save("helper", tmp_path / "helper")
            other = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=2)
            try:
                other.load_adapter("helper", str(saved))
            finally:
                other.close()
        future = [str(w.message) for w in caught if issubclass(w.category, FutureWarning)]
        assert future == []
    finally:
        engine.close()
