"""A single stream (batch 1, the TUI's live view) against the memory-bandwidth limit.

    .venv/bin/python benchmarks/single_stream.py [--tokens 96] [--runs 3] [--adapter DIR]
                                                 [--omp coopcode|spin] [--emulate-avx2]

In one process: the machine's read bandwidth (summing a 1 GiB tensor) and the weights' bytes
one decode step reads give the limit, bandwidth / bytes per token. Then the embedded engine
decodes one greedy sample of a HumanEval prompt (decode steps only: from its first streamed
token to its last), interleaved, best of `--runs`, in these ways:
- as shipped: a one-token forward on the kernels measured fastest for it here
  (`choose_kernels`), and idle threads releasing their OpenMP workers (`cpu_threads`);
- each other kernel the engine may choose for a one-token forward here (oneDNN, torch's
  own, oneDNN on prepacked weights, a bf16 copy of an fp32 model's weights:
  `coopcode.engines.embedded.kernel_weights`; the fused step, `coopcode.engines.embedded.fused_decode`, whose
  rows under an adapter run the fastest other kernel);
- idle threads keeping their OpenMP workers (before `cpu_threads.release`).
Each way's limit is that of the weights it reads (a bf16 copy reads half of fp32's bytes,
and so does the fused step of an fp32 model).
With `--adapter DIR` (a PEFT folder, or a checkpoint with `main/`) the sample is drawn
under that adapter as well (each token then also pays its LoRA products).

`--omp`: how OpenMP's idle workers wait. `coopcode` (default): as every coopcode command
runs, `OMP_WAIT_POLICY=PASSIVE` (set when `coopcode` is imported, before torch: workers sleep
at once, robust when another process takes a core). `spin`: libgomp's own default (workers
spin a while before sleeping), torch imported first so coopcode's setting comes too late.

`--emulate-avx2` runs it all with torch's, oneDNN's and MKL's kernels held to AVX2
(`ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2`), as on a CPU
without AVX-512, where the engine measures fp32 the faster format for a batch (an emulation:
the memory system and clocks stay this machine's).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coopcode.engines import Engine


def decode_rate(engine: Engine, prompt: str, tokens: int, adapter: str | None) -> float:
    """Tokens/s between the first and the last streamed token of one greedy sample."""
    from coopcode.engines import GenerationRequest, SamplingParams

    marks: list[tuple[float, int]] = []
    counted = [0]

    def on_delta(_sample: int, _text: str, n: int) -> None:
        counted[0] += n
        marks.append((time.perf_counter(), counted[0]))

    params = SamplingParams(n=1, max_new_tokens=tokens, temperature=0.0, seed=0)
    engine.submit(GenerationRequest(prompt, params, adapter=adapter), on_delta).future.result()
    (t0, n0), (t1, n1) = marks[0], marks[-1]
    return (n1 - n0) / (t1 - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--adapter", default=None)
    ap.add_argument("--omp", choices=("coopcode", "spin"), default="coopcode")
    ap.add_argument("--emulate-avx2", action="store_true",
                    help="hold torch, oneDNN and MKL to AVX2 kernels (as on a CPU without AVX-512)")
    args = ap.parse_args()
    if args.emulate_avx2:  # this folder is on sys.path
        from number_formats import rerun_held_to_avx2

        rerun_held_to_avx2()

    if args.omp == "coopcode":
        import coopcode  # noqa: F401 - sets OMP_WAIT_POLICY before torch loads
    import torch
    from number_formats import bytes_per_token, read_bandwidth  # this folder is on sys.path

    from coopcode.engines.embedded import cpu_threads
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.engines.embedded.kernel_weights import WAYS
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    engine = TransformersEngine(None)
    adapters: list[str | None] = [None]
    if args.adapter:
        folder = os.path.join(args.adapter, "main")
        engine.load_adapter("main", folder if os.path.isdir(folder) else args.adapter)
        adapters.append("main")
    problem = load_humaneval("test")[0]
    prompt = prompts.chat(engine.render_chat, prompts.single_message(problem)).text
    bandwidth = read_bandwidth()
    per_token = bytes_per_token(engine.base)
    limit = bandwidth / per_token
    engine.batcher()  # measures the one-token kernels (or reads what it measured)
    shipped, fallback = engine.kernels["one"][0], engine.kernels["one"][-1]  # (adapters it refuses)
    release = cpu_threads.release
    print(f"model {engine.model_name}, {str(engine.dtype).replace('torch.', '')}, "
          f"{torch.get_num_threads()} threads, OpenMP waits: {args.omp}; read bandwidth {bandwidth / 1e9:.1f} GB/s, "
          f"{per_token / 1e6:.0f} MB of weights per token: limit {limit:.1f} tok/s; "
          f"one-token forward measured fastest on {shipped} kernels")
    offered = engine._kernel_options()["one"]
    engine.add_copies({w for w in offered if w in WAYS})
    ways = {"as shipped": (shipped, release)}
    ways.update({f"{w} kernels for one token": (w, release) for w in offered if w != shipped})
    ways["idle threads keep their workers"] = (shipped, lambda: False)
    def reads_bf16_copy(kernels: str) -> bool:  # of an fp32 model's weights: half the bytes
        return kernels == "bf16" or (kernels == "fused" and engine.dtype == torch.float32)

    limits = {way: bandwidth / (per_token // 2 if reads_bf16_copy(kernels) else per_token)
              for way, (kernels, _) in ways.items()}
    best: dict[tuple[str, str | None], float] = {}
    for _ in range(args.runs):
        for way, (kernels, rel) in ways.items():
            engine.kernels = {**engine.kernels, "one": [kernels, fallback]}
            cpu_threads.release = rel
            for adapter in adapters:
                torch.ones(1 << 24).sum()  # this thread computes, as a loader or trainer does
                rate = decode_rate(engine, prompt, args.tokens, adapter)
                key = (way, adapter)
                best[key] = max(best.get(key, 0.0), rate)
    cpu_threads.release = release
    for (way, adapter), rate in best.items():
        print(f"{way:34s} adapter {adapter or 'none':5s} {rate:6.1f} tok/s   "
              f"{rate / limits[way]:4.0%} of its limit ({limits[way]:.1f})   "
              f"{rate / best[('as shipped', adapter)]:.2f}x shipped")
    engine.close()


if __name__ == "__main__":
    main()
