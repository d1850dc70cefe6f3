"""The policy-gradient update: our batched log-probs vs one forward per completion.

    .venv/bin/python benchmarks/train_step.py [--group 4] [--completion-tokens 160] [--model NAME]
                                              [--threads N] [--repeats 3]

One agent's update for one sibling group, as the trainer does it: log pi(a|h) of G sampled
completions under the current LoRA policy, the loss -mean(A * log pi), and its backward.
Two groups are timed, shaped like a MAGRPO step on HumanEval:
- helper: G completions of one prompt (the helper's G samples share their prompt);
- main (sequential scheme): G prompts that share the problem text and differ in the helper
  code each main sample was shown.

Three ways to compute the same numbers (the script checks they agree):
- reference: the reference trainer's loop: per completion, a forward over prompt +
  completion with full-vocabulary logits at every position, then a log-softmax per token;
  the summed loss is backpropagated once.
- per-completion (vectorised): the same forwards, but one log-softmax + gather per
  completion (how far the per-token loop alone explains the gap).
- ours (`coopcode.training.logprobs.completion_logprobs`): the shared prompt prefix once, the
  rest as one right-padded batch, LM head only where completion tokens are predicted.

Target: ours >= 2x faster than the reference for the same G and lengths.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import torch


def reference_logprobs(model: Any, prompts: list[list[int]], comps: list[list[int]],
                       temperature: float) -> list[torch.Tensor]:
    """The reference trainer's `_compute_loss_with_gradients`, minus its bookkeeping."""
    out = []
    for p, c in zip(prompts, comps):
        ids = torch.tensor(p + c[:-1]).unsqueeze(0)
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0, len(p) - 1:]
        per_token = [torch.log_softmax(logits[i].float() / temperature, dim=-1)[t]
                     for i, t in enumerate(c)]
        out.append(torch.stack(per_token).sum())
    return out


def vectorised_logprobs(model: Any, prompts: list[list[int]], comps: list[list[int]],
                        temperature: float) -> list[torch.Tensor]:
    from coopcode.training.logprobs import per_completion_logprobs

    return [x.sum() for x in per_completion_logprobs(model, prompts, comps, temperature=temperature)]


def ours_logprobs(model: Any, prompts: list[list[int]], comps: list[list[int]],
                  temperature: float) -> list[torch.Tensor]:
    from coopcode.training.logprobs import completion_logprobs

    return list(completion_logprobs(model, prompts, comps, temperature=temperature).reduce("sum"))


def timed_update(fn: Any, model: Any, params: list[Any], prompts: list[list[int]],
                 comps: list[list[int]], adv: torch.Tensor, temperature: float) -> tuple[float, torch.Tensor]:
    for p in params:
        p.grad = None
    t0 = time.perf_counter()
    with torch.enable_grad():
        seq = torch.stack(fn(model, prompts, comps, temperature))
        loss = -(adv * seq).mean()
        loss.backward()
    return time.perf_counter() - t0, seq.detach()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", type=int, default=4, help="G: completions per group")
    ap.add_argument("--completion-tokens", type=int, default=160, help="mean completion length")
    ap.add_argument("--helper-code-tokens", type=int, default=120, help="helper code in main prompts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model", default=None)
    ap.add_argument("--task", default="HumanEval/2")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--only", choices=("reference", "per-completion", "ours"), default=None,
                    help="time one way alone (run once per way to compare peak memory)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from peft import LoraConfig

    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts
    from coopcode.training.metrics import peak_rss_mb
    from coopcode.training.policy import TransformersPolicy

    problem = next(p for p in load_humaneval("all") if p.task_id == args.task)
    engine = TransformersEngine(args.model)
    policy = TransformersPolicy.sharing(engine)
    params = policy.add_adapter(
        "main", LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", task_type="CAUSAL_LM"))
    policy.select("main")
    model = policy.base
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():  # a trained-looking adapter: B is 0 right after init
        for n, p in policy.peft.named_parameters():
            if "lora_B" in n and ".main." in n:
                p.copy_(torch.randn(p.shape, generator=gen) * 1e-3)

    g, length = args.group, args.completion_tokens
    vocab = len(engine.tokenizer)
    lengths = [max(8, int(length * f)) for f in torch.linspace(0.6, 1.4, g).tolist()]
    comps = [torch.randint(100, vocab - 1000, (n,), generator=gen).tolist() for n in lengths]
    helper_prompt = engine.encode(prompts.chat(engine.render_chat, prompts.helper_message(problem)).text)

    def fake_helper(i: int) -> str:
        body = "\n".join(f"    x{i}_{k} = x{i}_{k - 1} + {k}" for k in range(1, args.helper_code_tokens // 10))
        return f"def aux(x{i}_0):\n{body}\n    return x{i}_0\n"

    main_prompts = [engine.encode(prompts.chat(engine.render_chat,
                                               prompts.main_message(problem, fake_helper(i))).text)
                    for i in range(g)]
    groups = {"helper": ([helper_prompt] * g, comps), "main": (main_prompts, comps)}
    adv = torch.linspace(-1, 1, g)
    ways = {"reference": reference_logprobs, "per-completion": vectorised_logprobs,
            "ours": ours_logprobs}
    if args.only:
        ways = {args.only: ways[args.only]}

    print(f"model {engine.model_name}, dtype {engine.dtype}, threads {torch.get_num_threads()}, "
          f"G={g}, completion tokens {lengths}, helper prompt {len(helper_prompt)} tokens, "
          f"main prompts {[len(p) for p in main_prompts]} tokens")
    if not args.only:
        print("| group | reference s | per-completion s | ours s | ours vs reference |")
        print("|---|---|---|---|---|")
    for name, (ps, cs) in groups.items():
        times: dict[str, list[float]] = {w: [] for w in ways}
        values: dict[str, torch.Tensor] = {}
        warm = next(iter(ways.values()))
        timed_update(warm, model, params, ps, cs, adv, 0.8)  # first calls pay for allocations
        for _ in range(args.repeats):
            for w, fn in ways.items():  # interleaved: all three see the same background load
                seconds, seq = timed_update(fn, model, params, ps, cs, adv, 0.8)
                times[w].append(seconds)
                values[w] = seq
        if args.only:
            print(f"| {name} | {args.only} | {statistics.median(times[args.only]):.2f} s |")
            continue
        for w in ("per-completion", "ours"):
            # bf16 forwards with different shapes round differently: compare loosely
            assert torch.allclose(values[w], values["reference"], rtol=2e-2, atol=0.5), (w, values)
        med = {w: statistics.median(t) for w, t in times.items()}
        print(f"| {name} | {med['reference']:.2f} | {med['per-completion']:.2f} | {med['ours']:.2f} "
              f"| **{med['reference'] / med['ours']:.2f}x** |")
    print(f"peak RSS {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
