"""Which number format should the embedded engine decode in, on this CPU? Measured.

    .venv/bin/python benchmarks/number_formats.py [--batches 1,32] [--steps 24] [--emulate-avx2]

For each format, in one process, the model's bare decode forward over its KV cache (the
engine's ceiling: decode_batch.py's `bare_decode_rate`) at each batch size, and a
teacher-forced check of what the format does to the model's outputs against fp32:
- `bf16`: weights and activations in bfloat16 (the default where the CPU has native bf16);
- `fp32`: float32 throughout (the default elsewhere);
- `int8-bf16`, `int8-fp32`: every Linear's weight stored as int8 with one scale per output
  channel (symmetric), multiplied by torch's weight-only int8 kernel
  (`torch._weight_int8pack_mm`), activations in bf16 / fp32. Half the bytes of bf16 to read
  per token, so batch 1 (bound by memory bandwidth) can gain; it changes the weights by
  rounding, so its top-1 agreement with fp32 is printed beside its speed.

Batch 1 is also set against the memory-bandwidth limit of its format: the weights' bytes a
decode step reads (every Linear and the tied LM head; one embedding row) over the machine's
read bandwidth, measured here by summing a 1 GiB tensor.

`--emulate-avx2` reruns the whole measurement in a child process with torch's, oneDNN's and
MKL's kernels held to AVX2 (`ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
MKL_ENABLE_INSTRUCTIONS=AVX2`), as on a CPU without AVX-512 (an emulation: the memory system
and clocks stay this machine's).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import torch
from decode_batch import bare_decode_rate  # this folder is on sys.path

FORMATS = ("bf16", "fp32", "int8-bf16", "int8-fp32")
# torch's own kernels, oneDNN's (bf16 matrix products) and MKL's (fp32 ones) each pick their
# instructions: all three held to AVX2.
AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def rerun_held_to_avx2() -> None:
    """Run this script again, without `--emulate-avx2`, with torch, oneDNN and MKL held to
    AVX2 (`AVX2_ONLY`: the kernels' limits must be set before torch loads)."""
    argv = [a for a in sys.argv if a != "--emulate-avx2"]
    os.execve(sys.executable, [sys.executable, *argv], {**os.environ, **AVX2_ONLY})


class Int8WeightOnlyLinear(torch.nn.Module):
    """A Linear whose weight is int8 with a per-output-channel scale; activations unchanged."""

    def __init__(self, linear: torch.nn.Linear, act_dtype: torch.dtype) -> None:
        super().__init__()
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=1e-8) / 127.0
        self.register_buffer("weight_int8", torch.round(w / scale[:, None]).to(torch.int8))
        self.register_buffer("scale", scale.to(act_dtype))
        self.bias = None if linear.bias is None else torch.nn.Parameter(
            linear.bias.detach().to(act_dtype), requires_grad=False)
        self.out_features = linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        y = torch._weight_int8pack_mm(x.reshape(-1, shape[-1]).contiguous(), self.weight_int8,
                                      self.scale)
        y = y.reshape(*shape[:-1], self.out_features)
        return y if self.bias is None else y + self.bias


def load(path: str, fmt: str) -> Any:
    from transformers import AutoModelForCausalLM

    act = torch.bfloat16 if fmt.endswith("bf16") else torch.float32
    model = AutoModelForCausalLM.from_pretrained(path, dtype=act).eval()
    if fmt.startswith("int8"):
        if model.config.tie_word_embeddings:  # the head gets its own int8 copy; lookups keep theirs
            model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone(),
                                                      requires_grad=False)
        for module in list(model.modules()):
            for child, sub in list(module.named_children()):
                if isinstance(sub, torch.nn.Linear):
                    setattr(module, child, Int8WeightOnlyLinear(sub, act))
    return model


def bytes_per_token(model: Any) -> int:
    """What one decode step reads of the weights: every Linear (int8 and its scales, or the
    dense weight) and one row of the embedding table."""
    total = 0
    for module in model.modules():
        if isinstance(module, Int8WeightOnlyLinear):
            total += module.weight_int8.numel() + module.scale.numel() * module.scale.element_size()
        elif isinstance(module, torch.nn.Linear):
            total += module.weight.numel() * module.weight.element_size()
        elif isinstance(module, torch.nn.Embedding):
            total += module.weight.shape[1] * module.weight.element_size()
    return total


def read_bandwidth() -> float:
    """Bytes/s the CPU reads, summing a 1 GiB tensor (best of 5)."""
    t = torch.ones(256 * 1024 * 1024, dtype=torch.float32)
    t.sum()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        t.sum()
        best = min(best, time.perf_counter() - t0)
    return t.numel() * 4 / best


def teacher_forced_logits(model: Any, ids: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return model(input_ids=ids).logits[0].float()


def measure(args: argparse.Namespace) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from coopcode.models import resolve_model
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    path = str(resolve_model(args.model).path)
    tok = AutoTokenizer.from_pretrained(path)
    problem = load_humaneval("test")[0]
    chat = prompts.chat(lambda msgs: tok.apply_chat_template(msgs, tokenize=False,
                                                             add_generation_prompt=True),
                        prompts.single_message(problem)).text
    ids = torch.tensor([tok.encode(chat)])
    # The reference continuation: the prompt and its canonical solution, teacher-forced.
    forced = torch.tensor([tok.encode(chat + problem.prompt + problem.canonical_solution)])
    batches = [int(b) for b in args.batches.split(",")]
    bandwidth = read_bandwidth()
    result: dict[str, Any] = {"capability": torch.backends.cpu.get_cpu_capability(),
                              "threads": torch.get_num_threads(), "prompt_tokens": ids.shape[1],
                              "read_bandwidth_gb_s": bandwidth / 1e9, "formats": {}}
    reference = None
    for fmt in ("fp32", *[f for f in FORMATS if f != "fp32"]):
        model = load(path, fmt)
        logits = teacher_forced_logits(model, forced)[ids.shape[1] - 1:-1]
        if reference is None:
            reference = logits
        agree = float((logits.argmax(-1) == reference.argmax(-1)).float().mean())
        per_token = bytes_per_token(model)
        rates = {b: bare_decode_rate(model, ids, b, args.steps) for b in batches}
        result["formats"][fmt] = {
            "tok_s": rates, "bytes_per_token": per_token,
            "bandwidth_limit_tok_s": bandwidth / per_token,
            "top1_agreement_with_fp32": agree,
            "max_abs_logit_diff": float((logits - reference).abs().max())}
        del model
    return result


def report(r: dict[str, Any], batches: list[int]) -> None:
    print(f"torch CPU capability {r['capability']}, {r['threads']} threads, read bandwidth "
          f"{r['read_bandwidth_gb_s']:.1f} GB/s, prompt {r['prompt_tokens']} tokens")
    head = " | ".join(f"batch {b} tok/s" for b in batches)
    print(f"| format | {head} | batch 1 / bandwidth limit | weights read per token | "
          f"top-1 agreement with fp32 | max |Δ logit| |")
    print("|---" * (len(batches) + 5) + "|")
    base = r["formats"]["bf16"]["tok_s"]
    for fmt, f in r["formats"].items():
        rates = " | ".join(f"{f['tok_s'][b]:.1f} ({f['tok_s'][b] / base[b]:.2f}x bf16)"
                           for b in batches)
        limit = f["tok_s"][1] / f["bandwidth_limit_tok_s"] if 1 in f["tok_s"] else float("nan")
        print(f"| {fmt} | {rates} | {limit:.0%} of {f['bandwidth_limit_tok_s']:.1f} | "
              f"{f['bytes_per_token'] / 1e6:.0f} MB | {f['top1_agreement_with_fp32']:.1%} | "
              f"{f['max_abs_logit_diff']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--model", default=None)
    ap.add_argument("--emulate-avx2", action="store_true",
                    help="also measure with ATEN_CPU_CAPABILITY=avx2 (torch's AVX2 kernels only)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if args.json:
        print(json.dumps(measure(args)))
        return
    runs = [("this CPU", dict(os.environ))]
    if args.emulate_avx2:
        runs.append(("AVX2 only (emulated)", {**os.environ, **AVX2_ONLY}))
    for label, env in runs:
        argv = [sys.executable, __file__, "--json", "--batches", args.batches,
                "--steps", str(args.steps)] + (["--model", args.model] if args.model else [])
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        for f in r["formats"].values():  # JSON made the batch sizes strings
            f["tok_s"] = {int(b): v for b, v in f["tok_s"].items()}
        print(f"\n## {label}")
        report(r, batches)


if __name__ == "__main__":
    main()
