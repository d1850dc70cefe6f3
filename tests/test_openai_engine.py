"""The OpenAI-compatible engine against a real `vllm serve` on loopback (never a mock):
streaming, n > 1, seeds, stop strings, adapters by served name, 429/500 from a real proxy in
front of the server, a server killed mid-bench (one line, then the rerun resumes), cancel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import assert_one_line_error
from vllm_env import SERVED, FaultProxy

from coopcode.engines import GenerationRequest, SamplingParams

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def engine(vllm_server: Any) -> Any:
    from coopcode.engines.served.openai_engine import OpenAIEngine

    eng = OpenAIEngine(None, base_urls=[vllm_server.url], helper_model="helper", main_model="main")
    yield eng
    eng.close()


def _prompt(engine: Any, text: str = "Write a Python function that adds two numbers.") -> str:
    return engine.render_chat([{"role": "user", "content": text}]) + "```python\n"


def test_the_server_and_its_adapters_are_found(engine: Any) -> None:
    assert engine.base_model == SERVED
    assert engine.adapters() == {"helper": "helper", "main": "main"}
    assert engine.describe()["base_urls"] == [engine.replicas[0].base_url]


def test_the_server_computes_in_the_format_this_cpu_multiplies_fastest(vllm_server: Any) -> None:
    """bf16 only where the CPU has it: served in bf16, an AVX2-only CPU emulates it (slower
    a batch: benchmarks/vllm_dtype.py)."""
    from coopcode.engines.embedded.cpu_format import measured_cpu_dtype

    assert vllm_server.dtype == measured_cpu_dtype()
    assert f"dtype=torch.{vllm_server.dtype}" in vllm_server.log.read_text(errors="replace")


def test_streamed_deltas_add_up_to_each_sample(engine: Any) -> None:
    texts: dict[int, str] = {}
    tokens: dict[int, int] = {}

    def on_delta(sample: int, text: str, n: int) -> None:
        texts[sample] = texts.get(sample, "") + text
        tokens[sample] = tokens.get(sample, 0) + n

    params = SamplingParams(n=3, max_new_tokens=24, temperature=1.0, seed=5)
    out = engine.submit(GenerationRequest(_prompt(engine), params), on_delta).result(300)
    assert len(out) == 3
    for i, c in enumerate(out):
        assert texts[i] == c.text and tokens[i] == c.n_tokens > 0
        assert c.finish_reason in ("stop", "length")
    assert len({c.text for c in out}) > 1  # three samples, three seeds


def test_the_same_seed_gives_the_same_sample(engine: Any) -> None:
    params = SamplingParams(n=2, max_new_tokens=24, temperature=1.0, seed=11)
    a = engine.generate([GenerationRequest(_prompt(engine), params)])[0]
    b = engine.generate([GenerationRequest(_prompt(engine), params)])[0]
    assert [c.text for c in a] == [c.text for c in b]
    # Sample 1 asked for alone (index 1) is sample 1 of the pair: what a resumed run asks.
    alone = engine.generate([GenerationRequest(_prompt(engine), params.with_(n=1, index=1))])[0][0]
    assert alone.text == a[1].text


def test_stop_strings_cut_the_text(engine: Any) -> None:
    params = SamplingParams(n=1, max_new_tokens=64, temperature=0.0, stop=("\n",))
    (c,) = engine.generate([GenerationRequest(_prompt(engine), params)])[0]
    assert "\n" not in c.text and c.finish_reason == "stop" and c.text
    # More stop strings than the API's 4: the rest are applied to the stream here.
    many = params.with_(stop=("@@1", "@@2", "@@3", "@@4", "@@5", "\n"))
    streamed: list[str] = []
    (d,) = engine.submit(GenerationRequest(_prompt(engine), many),
                         lambda _i, text, _n: streamed.append(text)).result(300)
    assert d.text == c.text and d.finish_reason == "stop" and "".join(streamed) == d.text


def test_a_base_request_batched_with_adapter_requests_keeps_the_base_weights(engine: Any) -> None:
    """vLLM CPU bug B: without a free LoRA slot, a base request in a batch with adapter
    requests gets the last slot's adapter. Greedy: the base text alone and in a mixed batch
    must be the same."""
    params = SamplingParams(n=1, max_new_tokens=32, temperature=0.0)
    prompt = _prompt(engine, "Write a function that returns the running sums of a list.")
    alone = engine.generate([GenerationRequest(prompt, params)])[0][0].text
    mixed = engine.generate([GenerationRequest(prompt, params, adapter="helper"),
                             GenerationRequest(prompt, params, adapter="main"),
                             GenerationRequest(prompt, params),
                             GenerationRequest(prompt, params, adapter="helper")])
    assert mixed[2][0].text == alone


def test_cancel_closes_the_stream(engine: Any) -> None:
    started = threading.Event()
    params = SamplingParams(n=1, max_new_tokens=1000, temperature=1.0, seed=1)
    sub = engine.submit(GenerationRequest(_prompt(engine, "Write a very long essay."), params),
                        lambda *_: started.set())
    assert started.wait(120)
    t0 = time.time()
    sub.cancel()
    (c,) = sub.result(60)
    assert c.finish_reason == "cancelled" and c.n_tokens < 1000
    assert time.time() - t0 < 30


def test_429_and_500_are_retried_with_backoff(vllm_server: Any) -> None:
    from coopcode.engines.served.openai_engine import OpenAIEngine

    root = vllm_server.url.removesuffix("/v1")
    proxy = FaultProxy(root)
    try:
        eng = OpenAIEngine(None, base_urls=[proxy.url], max_retries=4)
        proxy.fail_next(429, 500, 503)
        params = SamplingParams(n=1, max_new_tokens=8, temperature=0.0)
        (c,) = eng.generate([GenerationRequest(_prompt(eng), params)])[0]
        assert c.n_tokens > 0
        assert proxy.stats()["failed"] == 3
        proxy.fail_next(*([500] * 20))  # more than any retry budget: one clear error
        from coopcode.engines.served.openai_engine import ServerError

        with pytest.raises(ServerError, match="keeps failing"):
            eng.generate([GenerationRequest(_prompt(eng), params)])
        eng.close()
    finally:
        proxy.kill()


def _bench(base_url: str, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "coopcode", "bench", "--engine", "openai", "--base-url", base_url,
            "--helper-model", "helper", "--main-model", "main", "--problems", str(REPO / "examples"),
            "--n", "2", "--k", "1,2", "--max-new-tokens", "48", "--sandbox", "process",
            "--out", str(out), *extra]


def test_a_server_killed_mid_bench_gives_one_line_and_the_rerun_resumes(
        vllm_server: Any, tmp_path: Path, cli_env: dict[str, str]) -> None:
    proxy = FaultProxy(vllm_server.url.removesuffix("/v1"))
    out = tmp_path / "run"
    bench = subprocess.Popen(_bench(proxy.url, out, "--events", "jsonl"), env=cli_env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    assert bench.stdout is not None
    for line in bench.stdout:
        if json.loads(line)["type"] == "verdict":
            break
    proxy.kill()  # the server dies with samples in flight
    rest, err = bench.communicate(timeout=600)
    done = subprocess.CompletedProcess(bench.args, bench.returncode, rest, err)
    assert_one_line_error(done, str(proxy.port))
    before = len((out / "samples.jsonl").read_text().splitlines())
    assert 1 <= before < 6
    proxy.start()  # back on the same port
    try:
        again = subprocess.run(_bench(proxy.url, out), env=cli_env, capture_output=True, text=True,
                               timeout=900, cwd=REPO)
        assert again.returncode == 0, again.stderr[-2000:]
    finally:
        proxy.kill()
    lines = (out / "samples.jsonl").read_text().splitlines()
    keys = [(r["scheme"], r["task_id"], r["sample"]) for r in map(json.loads, lines)]
    print(f"server killed mid-bench: {before} of 6 samples kept, the rerun wrote "
          f"{len(lines) - before}; {len(set(keys))} distinct keys")
    assert len(keys) == len(set(keys)) == 6


def test_one_of_two_replicas_killed_mid_bench_the_run_carries_on_with_the_other(
        vllm_server: Any, tmp_path: Path, cli_env: dict[str, str]) -> None:
    target = vllm_server.url.removesuffix("/v1")
    doomed, survivor = FaultProxy(target), FaultProxy(target)
    out = tmp_path / "run"
    argv = _bench(doomed.url, out, "--events", "jsonl") + ["--base-url", survivor.url]
    bench = subprocess.Popen(argv, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, cwd=REPO)
    try:
        assert bench.stdout is not None
        for line in bench.stdout:
            if json.loads(line)["type"] == "verdict":
                break
        doomed.kill()  # one replica dies with samples in flight; the other stays
        rest, err = bench.communicate(timeout=900)
    finally:
        survivor.kill()
    assert bench.returncode == 0, err[-3000:]
    # With --events the engine's warning is a log event (a program following the bench, the
    # TUI, shows it); without, a line on stderr.
    logs = [e["message"] for e in map(json.loads, filter(str.strip, rest.splitlines()))
            if e["type"] == "log"]
    said = "\n".join([err, *logs])
    assert said.count("stopped answering") == 1, said  # said once
    assert str(doomed.port) in said and "go to the other replicas" in said
    lines = (out / "samples.jsonl").read_text().splitlines()
    keys = [(r["scheme"], r["task_id"], r["sample"]) for r in map(json.loads, lines)]
    print(f"one of two replicas killed mid-bench: {len(set(keys))} of 6 samples, "
          f"{said.count('stopped answering')} warning")
    assert len(keys) == len(set(keys)) == 6  # none lost, none doubled


def test_bench_through_the_server_writes_what_the_local_engine_writes(
        vllm_server: Any, tmp_path: Path, cli_env: dict[str, str], tiny_model_dir: Path) -> None:
    served = subprocess.run(_bench(vllm_server.url, tmp_path / "served", "--limit", "1"),
                            env=cli_env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert served.returncode == 0, served.stderr[-2000:]
    local = subprocess.run(
        [sys.executable, "-m", "coopcode", "bench", "--model", str(tiny_model_dir), "--problems",
         str(REPO / "examples"), "--n", "2", "--k", "1,2", "--max-new-tokens", "8",
         "--sandbox", "process", "--limit", "1", "--out", str(tmp_path / "local")],
        env=cli_env, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert local.returncode == 0, local.stderr[-2000:]

    def shape(folder: Path) -> tuple[Any, ...]:
        records = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
        summary = json.loads((folder / "summary.json").read_text())
        meta = json.loads((folder / "meta.json").read_text())
        return (sorted(os.listdir(folder)), sorted({k for r in records for k in r}),
                sorted({k for r in records for o in r["outputs"] for k in o}),
                sorted(summary), sorted(summary["rows"][0]), sorted(meta["identity"]))

    assert shape(tmp_path / "served") == shape(tmp_path / "local")
    meta = json.loads((tmp_path / "served" / "meta.json").read_text())
    assert meta["engine"] == "openai"
    assert meta["engine_detail"]["base_urls"] == [vllm_server.url]
    assert meta["engine_detail"]["served"] == {"helper": "helper", "main": "main"}
