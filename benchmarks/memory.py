"""Peak memory: one agent vs helper + main as two LoRA adapters on one shared base.

    .venv/bin/python benchmarks/memory.py [--rank 16]

Each case runs in a fresh subprocess (peak RSS is per process) and samples 4 completions per
agent of one HumanEval prompt:
  base  - the bare base model, no adapter (for reference)
  one   - one agent: the base with its LoRA adapter (rank r, every linear layer)
  pair  - helper + main: the same base with two adapters, each agent sampling in turn
Two agents as two full model copies (the reference implementation's way) would be ~2x `one`.
Target: pair <= 1.1x one.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def make_adapter(base_path: str, dest: Path, rank: int, seed: int) -> None:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.bfloat16)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, init_lora_weights=False,
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj",
                                        "gate_proj", "up_proj", "down_proj"])
    get_peft_model(model, config).save_pretrained(str(dest))


def run_case(case: str, adapters: list[str]) -> dict:
    from coopcode.engines import GenerationRequest, SamplingParams
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts
    from coopcode.training.metrics import peak_rss_mb

    engine = TransformersEngine(None)
    names: list[str | None] = [None]
    if case == "one":
        engine.load_adapter("main", adapters[1])
        names = ["main"]
    elif case == "pair":
        engine.load_adapter("helper", adapters[0])
        engine.load_adapter("main", adapters[1])
        names = ["helper", "main"]
    problem = load_humaneval("test")[0]
    prompt = prompts.chat(engine.render_chat, prompts.single_message(problem)).text
    params = SamplingParams(n=4, max_new_tokens=64, temperature=0.8)
    engine.generate([GenerationRequest(prompt, params, adapter=a) for a in names])
    return {"case": case, "peak_rss_mb": peak_rss_mb()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--case", choices=["base", "one", "pair"])
    ap.add_argument("--adapters", nargs="*", default=[])
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.adapters)))
        return
    from coopcode.models import resolve_model

    base = resolve_model(None).path
    with tempfile.TemporaryDirectory() as tmp:
        paths = [str(Path(tmp) / "helper"), str(Path(tmp) / "main")]
        for i, p in enumerate(paths):
            make_adapter(base, Path(p), args.rank, seed=i)
        results = {}
        for case in ("base", "one", "pair"):
            out = subprocess.run([sys.executable, __file__, "--case", case, "--adapters", *paths],
                                 capture_output=True, text=True, check=True)
            results[case] = json.loads(out.stdout.strip().splitlines()[-1])["peak_rss_mb"]
    print(f"bare base model (reference):        peak RSS {results['base']:7.0f} MB")
    print(f"one agent (base + 1 LoRA r={args.rank}):    peak RSS {results['one']:7.0f} MB")
    print(f"helper + main (base + 2 LoRA r={args.rank}): peak RSS {results['pair']:7.0f} MB")
    print(f"ratio pair / one: {results['pair'] / results['one']:.3f}x (target <= 1.1x; two model "
          f"copies would be ~2x)")
    print(f"ratio pair / bare base: {results['pair'] / results['base']:.3f}x")


if __name__ == "__main__":
    main()
