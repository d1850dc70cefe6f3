"""Which number format should `vllm serve` (the CPU build) compute in on this CPU? Measured.

    .venv/bin/python benchmarks/vllm_dtype.py [--prompts 8] [--max-tokens 128] [--dtypes bfloat16,float32]

For each format, in one run, one after the other: `vllm serve` of the embedded model with the
committed pair as LoRA modules (as the test suite starts it), then
- the seconds until it answers;
- one greedy request alone (single-stream tokens/s);
- `--prompts` HumanEval test-split prompts, each asked of the base model, the `helper` adapter
  and the `main` adapter, all at once (greedy; batch tokens/s).
Then the ratio of the two formats and how many of the greedy texts they agree on. The
suite's vLLM tests serve the format `measured_cpu_dtype()` chooses (bf16 only where the CPU has
native bf16); this is the run that says what that choice is worth here.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from coopcode.engines.embedded.cpu_format import cpu_key, measured_cpu_dtype
from coopcode.engines.served.vllm_server import VLLMServer
from coopcode.models import CATALOG, DEFAULT_MODEL, model_dir
from coopcode.problems import load_humaneval

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "checkpoints" / "magrpo-0.5b-demo"


def complete(url: str, model: str, prompt: str, max_tokens: int) -> tuple[str, int]:
    import httpx2 as httpx

    r = httpx.post(f"{url}/completions", timeout=1800, json={
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0.0, "seed": 0})
    r.raise_for_status()
    body = r.json()
    return str(body["choices"][0]["text"]), int(body["usage"]["completion_tokens"])


def measure(dtype: str, prompts: list[str], max_tokens: int) -> dict[str, Any]:
    log = Path(tempfile.mkdtemp()) / f"serve-{dtype}.log"
    server = VLLMServer(model_dir(CATALOG[DEFAULT_MODEL]), DEFAULT_MODEL, log, dtype=dtype,
                        lora_modules={"helper": DEMO / "helper", "main": DEMO / "main"})
    try:
        t0 = time.perf_counter()
        server.wait_ready(timeout=1200)
        ready = time.perf_counter() - t0
        complete(server.url, DEFAULT_MODEL, prompts[0], 4)  # first request's one-off costs
        t0 = time.perf_counter()
        _, single_tokens = complete(server.url, DEFAULT_MODEL, prompts[0], max_tokens)
        single = single_tokens / (time.perf_counter() - t0)
        asks = [(m, p) for p in prompts for m in (DEFAULT_MODEL, "helper", "main")]
        t0 = time.perf_counter()
        with ThreadPoolExecutor(len(asks)) as pool:
            got = list(pool.map(lambda a: complete(server.url, a[0], a[1], max_tokens), asks))
        wall = time.perf_counter() - t0
    finally:
        server.stop()
    tokens = sum(n for _, n in got)
    print(f"{dtype}: ready in {ready:.0f} s; single stream {single:.1f} tok/s; {len(asks)} "
          f"requests at once: {tokens} tokens in {wall:.1f} s = {tokens / wall:.1f} tok/s", flush=True)
    return {"ready": ready, "single": single, "batch": tokens / wall, "texts": [t for t, _ in got]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--dtypes", default="bfloat16,float32")
    args = ap.parse_args()
    print(f"CPU: {cpu_key()}; measured_cpu_dtype() here: {measured_cpu_dtype()}", flush=True)
    prompts = [p.prompt for p in load_humaneval("test")[:args.prompts]]
    dtypes = args.dtypes.split(",")
    got = {d: measure(d, prompts, args.max_tokens) for d in dtypes}
    if len(dtypes) == 2:
        a, b = dtypes
        same = sum(x == y for x, y in zip(got[a]["texts"], got[b]["texts"]))
        print(f"{b} / {a}: ready {got[a]['ready'] / got[b]['ready']:.2f}x faster, single stream "
              f"{got[b]['single'] / got[a]['single']:.2f}x, batch {got[b]['batch'] / got[a]['batch']:.2f}x; "
              f"greedy texts equal in {same} of {len(got[a]['texts'])}")


if __name__ == "__main__":
    main()
