"""A few streams at once (the TUI's helper and main side by side, a batch's last rows): the
fused step for several decoding rows against the kernels those steps ran on before.

    .venv/bin/python benchmarks/few_streams.py [--rows 2,4,8] [--tokens 96] [--runs 3]
                                               [--adapters DIR] [--emulate-avx2]

In one process, on the embedded engine: for each row count R, R greedy samples of different
HumanEval prompts submitted together (with `--adapters DIR`, a checkpoint with `helper/` and
`main/`, the rows alternate between the two adapters, as the TUI's two agents do), and the
decode rate while all R rows decode (from the moment the last row streams its first token
to the moment the first row streams its last: no prompt work inside). Interleaved, best of
`--runs`, for each kernel the engine may choose for such steps (`choose_kernels`' "few":
the fused step, `coopcode.engines.embedded.fused_decode`, and the batch's kernels, which ran these
steps before it). Prints each way's tok/s and its ratio to the batch's kernels.

`--emulate-avx2`: torch, oneDNN and MKL held to AVX2 (as `single_stream.py`), where the
engine measures fp32 the format and the fused step runs on a bf16 copy.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coopcode.engines import Engine


def window_rate(engine: Engine, prompts: list[str], adapters: list[str | None], tokens: int) -> float:
    """Tokens/s of R greedy samples while all of them decode."""
    from coopcode.engines import GenerationRequest, SamplingParams

    marks: list[list[tuple[float, int]]] = [[] for _ in prompts]

    def on_delta(row: int) -> Any:
        def seen(_sample: int, _text: str, n: int) -> None:
            marks[row].append((time.perf_counter(), n))
        return seen

    params = SamplingParams(n=1, max_new_tokens=tokens, temperature=0.0, seed=0)
    subs = engine.submit_all([(GenerationRequest(p, params, adapter=a), on_delta(i))
                              for i, (p, a) in enumerate(zip(prompts, adapters, strict=True))])
    for sub in subs:
        sub.future.result()
    start = max(m[0][0] for m in marks)
    end = min(m[-1][0] for m in marks)
    inside = sum(n for m in marks for t, n in m if start < t <= end)
    return inside / (end - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="2,4,8")
    ap.add_argument("--tokens", type=int, default=96)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--adapters", default=None, help="a checkpoint with helper/ and main/")
    ap.add_argument("--emulate-avx2", action="store_true")
    args = ap.parse_args()
    if args.emulate_avx2:  # this folder is on sys.path
        from number_formats import rerun_held_to_avx2

        rerun_held_to_avx2()

    import torch

    import coopcode  # noqa: F401 - sets OMP_WAIT_POLICY before torch loads
    from coopcode.engines.embedded.engine import TransformersEngine
    from coopcode.engines.embedded.kernel_weights import WAYS
    from coopcode.problems import load_humaneval
    from coopcode.schemes import prompts

    engine = TransformersEngine(None)
    names: list[str | None] = [None]
    if args.adapters:
        for role in ("helper", "main"):
            engine.load_adapter(role, os.path.join(args.adapters, role))
        names = ["helper", "main"]
    problems = load_humaneval("test")
    texts = [prompts.chat(engine.render_chat, prompts.single_message(p)).text for p in problems]
    engine.batcher()  # measures the kernels (or reads what it measured)
    options = engine._kernel_options()
    if "few" not in options:
        print("the fused step is not offered here:", engine.kernels)
        return
    shipped = dict(engine.kernels)
    engine.add_copies({w for w in options["few"] if w in WAYS})
    print(f"model {engine.model_name}, {str(engine.dtype).replace('torch.', '')}, "
          f"{torch.get_num_threads()} threads; kernels measured fastest: {shipped}")
    rows = [int(r) for r in args.rows.split(",")]
    best: dict[tuple[int, str], float] = {}
    for _ in range(args.runs):
        for r in rows:
            for way in options["few"]:
                engine.kernels = {**shipped, "few": [way, *shipped["many"]]}  # adapters it refuses
                adapters = [names[i % len(names)] for i in range(r)]
                rate = window_rate(engine, texts[:r], adapters, args.tokens)
                best[(r, way)] = max(best.get((r, way), 0.0), rate)
    before = shipped["many"][0]
    for (r, way), rate in best.items():
        mark = " (as shipped)" if way == shipped["few"][0] else " (before: the batch's kernels)" if way == before else ""
        print(f"{r} rows  {way:8s}{mark:32s} {rate:6.1f} tok/s   {rate / best[(r, before)]:.2f}x the batch's kernels")
    engine.close()


if __name__ == "__main__":
    main()
