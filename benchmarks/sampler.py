"""Sampling a step's tokens: fresh tensors every step vs scratch buffers kept between steps.

    .venv/bin/python benchmarks/sampler.py [--rows 1,8,32,64] [--vocab 151936] [--reps 20]
                                           [--engine-steps 32]

For each batch size, in one process, interleaved, on the same bf16 logits (a peaked head over
noise, the 0.5B model's vocabulary) and the same per-row settings (T=0.8, top-p 0.95):
- reference: the sampler as it was before (every step: the logits copied to float32, an
  argmax and the temperature over all rows, `torch.logsumexp` and `torch.topk`, each a
  fresh [rows, vocabulary] tensor);
- ours: `coopcode.engines.embedded.batching.pick_tokens` with its `Workspace` (the same arithmetic
  in buffers kept from step to step; the log-normalizer from the top-k's max).
Prints ms per step for each, the ratio, and whether both drew the same tokens.

Then each step of the distribution work alone at the largest row count, on fresh tensors and
in a kept buffer (where the time went). Then, with `--engine-steps N` (> 0), the embedded engine (the 0.5B model) samples `rows`
samples of a HumanEval prompt for N tokens with each sampler in turn, interleaved, best of 3:
what the sampler is worth to a whole decode step, and the share of the time spent sampling.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import coopcode  # noqa: F401 - before torch: it sets how OpenMP threads wait
from coopcode.engines.embedded.batching import TOP_K_PREFILTER, Workspace, _nucleus, pick_tokens


class Settings:
    def __init__(self, seed: int) -> None:
        import torch

        self.temperature, self.top_p = 0.8, 0.95
        self.generator = torch.Generator().manual_seed(seed)


def fresh_tensors(logits: Any, rows: list[Settings]) -> list[int]:
    """The sampler before scratch buffers (revision 6c8e2e3), for the rows' common case."""
    import torch

    logits = logits.float().cpu()
    chosen = logits.argmax(dim=-1).tolist()
    temps = torch.tensor([r.temperature for r in rows], dtype=torch.float32)
    top_ps = torch.tensor([r.top_p for r in rows], dtype=torch.float32)
    hot = (temps > 0).nonzero().flatten()
    scaled = logits[hot] / temps[hot, None]
    log_z = torch.logsumexp(scaled, dim=-1, keepdim=True)
    vals, idx = torch.topk(scaled, min(TOP_K_PREFILTER, scaled.shape[-1]), dim=-1)
    probs = _nucleus(torch.exp(vals - log_z), top_ps[hot, None])
    for j, i in enumerate(hot.tolist()):
        p = probs[j]
        chosen[i] = int(idx[j, torch.multinomial(p / p.sum(), 1, generator=rows[i].generator)])
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="1,8,32,64")
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--engine-steps", type=int, default=32)
    args = ap.parse_args()
    import torch

    gen = torch.Generator().manual_seed(0)
    print(f"{torch.get_num_threads()} threads, vocabulary {args.vocab}, T=0.8, top-p 0.95; "
          f"ms per step, best of {args.reps}")
    for rows in (int(r) for r in args.rows.split(",")):
        logits = torch.randn(rows, args.vocab, generator=gen)
        logits[:, :50] += 14  # most of the mass on a few tokens, as a model's
        logits = logits.to(torch.bfloat16)
        work = Workspace()
        best = {"reference": float("inf"), "ours": float("inf")}
        same = True
        for rep in range(args.reps):
            picks = {}
            for name in ("reference", "ours"):
                settings = [Settings(rep * 1000 + i) for i in range(rows)]
                t0 = time.perf_counter()
                if name == "reference":
                    picks[name] = fresh_tensors(logits, settings)
                else:
                    picks[name] = pick_tokens(logits, settings, work)
                best[name] = min(best[name], time.perf_counter() - t0)
            same &= picks["reference"] == picks["ours"]
        print(f"rows {rows:3d}   reference {best['reference'] * 1e3:7.2f} ms   ours "
              f"{best['ours'] * 1e3:7.2f} ms   ours {best['reference'] / best['ours']:.2f}x faster   "
              f"same tokens: {same}")
    ops_breakdown(max(int(r) for r in args.rows.split(",")), args.vocab, args.reps)
    if args.engine_steps > 0:
        engine_rates([int(r) for r in args.rows.split(",")], args.engine_steps)


def ops_breakdown(rows: int, vocab: int, reps: int) -> None:
    """Each step of the distribution work alone, on fresh tensors and in a kept buffer."""
    import torch

    logits = torch.randn(rows, vocab).to(torch.bfloat16)
    x = logits.float()
    top = x.max(dim=-1, keepdim=True).values
    buf = torch.empty_like(x)
    ops = {"float32 copy of the logits, fresh": lambda: logits.float(),
           "float32 copy of the logits, into a kept buffer": lambda: buf.copy_(logits),
           "temperature division, fresh": lambda: x / 0.8,
           "argmax over every row": lambda: x.argmax(dim=-1),
           "torch.logsumexp, fresh": lambda: torch.logsumexp(x, dim=-1),
           "exp(x - max) summed, fresh": lambda: (x - top).exp_().sum(dim=-1),
           "exp(x - max) summed, in a kept buffer": lambda: torch.sub(x, top, out=buf).exp_().sum(-1),
           "torch.topk 256": lambda: torch.topk(x, TOP_K_PREFILTER, dim=-1)}
    print(f"\nthe distribution work's steps at {rows} rows, ms, best of {reps}:")
    for name, op in ops.items():
        op()
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            op()
            best = min(best, time.perf_counter() - t0)
        print(f"  {name:48s} {best * 1e3:7.2f}")


def engine_rates(batches: list[int], steps: int) -> None:
    """Tokens/s of the engine's sampling with each sampler, interleaved, best of 3."""
    from coopcode.engines import GenerationRequest, SamplingParams, batching
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    engine = TransformersEngine(None, max_batch=max(batches))
    prompt = prompts.chat(engine.render_chat,
                          prompts.single_message(load_humaneval("test")[0])).text
    engine.generate([GenerationRequest(prompt, SamplingParams(n=2, max_new_tokens=4))])  # warm-up
    ours = batching.pick_tokens
    print(f"\nthe engine ({engine.model_name}, {str(engine.dtype).replace('torch.', '')}), "
          f"{steps} tokens a sample, T=0.8; tokens/s, best of 3")
    samplers = {"reference": lambda logits, rows, _work=None: fresh_tensors(logits, rows),
                "ours": ours}
    for batch in batches:
        best = {"reference": 0.0, "ours": 0.0}
        share = {"reference": 0.0, "ours": 0.0}  # of the best run's wall time, in sampling
        for _ in range(3):
            for name in best:
                inside = [0.0]

                def timed(*a: Any, _f: Any = samplers[name], _in: list[float] = inside) -> Any:
                    t = time.perf_counter()
                    try:
                        return _f(*a)
                    finally:
                        _in[0] += time.perf_counter() - t

                batching.pick_tokens = timed
                params = SamplingParams(n=batch, max_new_tokens=steps, temperature=0.8, seed=1)
                t0 = time.perf_counter()
                got = engine.generate([GenerationRequest(prompt, params)])[0]
                wall = time.perf_counter() - t0
                rate = sum(c.n_tokens for c in got) / wall
                if rate > best[name]:
                    best[name], share[name] = rate, inside[0] / wall
        batching.pick_tokens = ours
        print(f"rows {batch:3d}   reference sampler {best['reference']:7.1f} tok/s "
              f"({share['reference']:.0%} of it sampling)   ours {best['ours']:7.1f} tok/s "
              f"({share['ours']:.0%})   ours {best['ours'] / best['reference']:.2f}x")
    engine.close()


if __name__ == "__main__":
    main()
