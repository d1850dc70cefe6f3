"""Continuous batching in the embedded engine: requests join a running batch between decode
steps, rows leave when done, the batch stays within its bounds, adapters mix in one batch."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import make_adapter
from engine_trace import traced

from coopcode.engines import Completion, GenerationRequest, SamplingParams
from coopcode.engines.base import Engine
from coopcode.engines.embedded.engine import TransformersEngine


def _prompt(engine: TransformersEngine, text: str) -> str:
    return engine.render_chat([{"role": "user", "content": text}])


def assert_greedy(engine: TransformersEngine, prompt: str, token_ids: list[int],
                  adapter: str | None = None) -> None:
    """Every token is the one the model, run on this prompt alone, ranks first (up to
    rounding: a batch rounds differently from a lone pass, see test_engine)."""
    import torch

    ids = engine.encode(prompt)
    inputs = torch.tensor([ids + token_ids])
    # The PEFT model's own forward, as a trainer sharing the engine's model runs it.
    with torch.inference_mode():
        if engine.peft is None:
            out = engine.base(inputs)
        elif adapter is None:
            with engine.peft.disable_adapter():
                out = engine.peft(inputs)
        else:
            engine.peft.set_adapter(adapter)
            out = engine.peft(inputs)
    steps = out.logits[0].float()[len(ids) - 1:len(ids) - 1 + len(token_ids)]
    picked = steps.gather(-1, torch.tensor(token_ids)[:, None])[:, 0]
    gap = steps.max(dim=-1).values - picked
    assert float(gap.max()) <= 1e-4, gap.tolist()


@pytest.fixture(scope="module")
def engine(tiny_model_dir: Path) -> Any:
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=4)
    yield eng
    eng.close()


def test_a_request_joins_the_running_batch_between_decode_steps(engine: TransformersEngine) -> None:
    first_prompt = _prompt(engine, "Write a function.")
    later_prompt = _prompt(engine, "A second, different and longer request arriving later.")
    # The first request samples 200 tokens (the tiny model's near-uniform distribution all but
    # never draws EOS): it is still running, whatever the machine's load, when the second comes.
    long = SamplingParams(n=1, max_new_tokens=200, temperature=1.0, seed=3)
    greedy = SamplingParams(n=1, max_new_tokens=24, temperature=0.0)
    first_tokens = threading.Event()
    count = [0]

    def on_delta(_sample: int, _text: str, tokens: int) -> None:
        count[0] += tokens
        if count[0] >= 5:
            first_tokens.set()

    reused = engine.batcher().reused_tokens
    with traced(engine) as forwards:
        a = engine.submit(GenerationRequest(first_prompt, long), on_delta)
        assert first_tokens.wait(60)
        b = engine.submit(GenerationRequest(later_prompt, greedy))
        (ca,), (cb,) = a.result(120), b.result(120)
    assert ca.finish_reason == "length" and ca.n_tokens == 200
    # The later prompt was prefilled in the same forward as the first row's decode step
    # (all of it but the chat template's opening, which the first row's cache held)...
    n_later = len(engine.encode(later_prompt))
    join = next(i for i, f in enumerate(forwards) if i > 0 and f.chunks)
    assert forwards[join].chunks == [n_later - (engine.batcher().reused_tokens - reused)]
    assert join > 1 and forwards[join].decode == 1
    assert all(f.decode == 1 and not f.chunks for f in forwards[1:join])
    # ...then both stepped together until the later one finished.
    assert forwards[join + 1].decode == 2
    assert_greedy(engine, later_prompt, cb.token_ids)


def test_the_batch_never_exceeds_max_batch(engine: TransformersEngine) -> None:
    prompts = [_prompt(engine, f"Problem number {i}.") for i in range(3)]
    params = SamplingParams(n=3, max_new_tokens=6, temperature=1.0, seed=2)
    with traced(engine) as forwards:
        out = engine.generate([GenerationRequest(p, params) for p in prompts])
    assert [len(o) for o in out] == [3, 3, 3]
    assert max(f.rows for f in forwards) == 4
    # 9 rows through a batch of 4: every row is admitted, and decode steps run all along.
    assert all(c.n_tokens >= 1 for o in out for c in o)


def test_cancelling_one_request_leaves_the_others(engine: TransformersEngine) -> None:
    long = SamplingParams(n=2, max_new_tokens=200, temperature=1.0, seed=1)
    short = SamplingParams(n=1, max_new_tokens=10, temperature=0.0)
    started = threading.Event()
    a = engine.submit(GenerationRequest(_prompt(engine, "Long one."), long),
                      lambda *_: started.set())
    b = engine.submit(GenerationRequest(_prompt(engine, "Short one."), short))
    assert started.wait(60)
    a.cancel()
    got = a.result(60)
    assert [c.finish_reason for c in got] == ["cancelled", "cancelled"]
    assert all(c.n_tokens < 200 for c in got)
    (c,) = b.result(60)
    assert c.finish_reason in ("length", "stop") and c.n_tokens >= 1


def test_a_kv_budget_holds_rows_back_until_others_leave(tiny_model_dir: Path) -> None:
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    try:
        prompt = _prompt(eng, "Budget.")
        room = len(eng.encode(prompt)) + 8
        batcher = eng.batcher()
        batcher.kv_budget_tokens = batcher.cache.tokens_after(2, room)  # two rows' worth
        with traced(eng) as forwards:
            out = eng.generate([GenerationRequest(prompt, SamplingParams(
                n=5, max_new_tokens=8, temperature=1.0, seed=4))])[0]
        assert len(out) == 5 and all(c.n_tokens >= 1 for c in out)  # none lost
        assert max(f.rows for f in forwards) == 2
        # The cache never held more than the budget, and gives its memory back when idle
        # (at the end of the step that completed the request: a moment after it returned).
        assert batcher.peak_cache_tokens <= batcher.kv_budget_tokens
        deadline = time.time() + 10
        while batcher.cache.slots and time.time() < deadline:
            time.sleep(0.01)
        assert batcher.cache.slots == 0
    finally:
        eng.close()


def test_helper_main_and_base_rows_step_together(tiny_model_dir: Path, tmp_path: Path) -> None:
    """One forward serves rows of every adapter (per-token LoRA), and each row gets its own
    adapter's output (a base row is not given an adapter's weights)."""
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    try:
        eng.load_adapter("helper", str(make_adapter(tiny_model_dir, tmp_path / "h", seed=1)))
        eng.load_adapter("main", str(make_adapter(tiny_model_dir, tmp_path / "m", seed=2)))
        prompt = _prompt(eng, "Mixed batch.")
        params = SamplingParams(n=1, max_new_tokens=10, temperature=0.0)
        adapters = [None, "helper", "main"]
        with traced(eng) as forwards:
            out = eng.generate([GenerationRequest(prompt, params, adapter=a) for a in adapters])
        n_prompt = len(eng.encode(prompt))
        assert forwards[0].chunks == [n_prompt] * 3  # three prefills in one forward
        assert forwards[0].adapters == ["None", "helper", "main"]
        assert forwards[1].decode == 3 and len(forwards[1].adapters) == 3
        for adapter, (c,) in zip(adapters, out):
            assert_greedy(eng, prompt, c.token_ids, adapter)
        assert len({c.text for (c,) in out}) == 3
    finally:
        eng.close()


def test_long_prompts_go_in_chunks_beside_decoding_rows_of_other_adapters(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    """A prompt longer than a forward's token budget is prefilled over several forwards, each
    beside the decode tokens of rows already running under other adapters; every row still
    gets what the model, run on its prompt alone under its adapter, ranks first."""
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    try:
        eng.load_adapter("helper", str(make_adapter(tiny_model_dir, tmp_path / "h", seed=1)))
        eng.load_adapter("main", str(make_adapter(tiny_model_dir, tmp_path / "m", seed=2)))
        batcher = eng.batcher()
        batcher.step_tokens = 16
        short = _prompt(eng, "Short.")
        long = _prompt(eng, "A long prompt: " + "several words that make many tokens, " * 6)
        n_long = len(eng.encode(long))
        assert n_long > 3 * 16
        greedy = SamplingParams(n=1, max_new_tokens=30, temperature=0.0)
        with traced(eng) as forwards:
            first = eng.submit(GenerationRequest(short, greedy, adapter="helper"))
            deadline = time.time() + 60
            while len(forwards) < 3 and time.time() < deadline:  # the first row decodes
                time.sleep(0.005)
            later = eng.submit_all([(GenerationRequest(long, greedy.with_(max_new_tokens=12),
                                                       adapter="main"), None),
                                    (GenerationRequest(long, greedy.with_(max_new_tokens=12)), None)])
            (c_first,) = first.result(120)
            (c_main,), (c_base,) = (s.result(120) for s in later)
        mixed = [f for f in forwards if f.decode and f.chunks]
        assert mixed and all(f.decode + sum(f.chunks) <= 16 for f in forwards)
        assert any(f.adapters == ["None", "helper", "main"] for f in mixed)
        chunks = [c for f in forwards for c in f.chunks]
        assert sum(chunks) == len(eng.encode(short)) + 2 * n_long and max(chunks) < n_long
        assert_greedy(eng, short, c_first.token_ids, "helper")
        assert_greedy(eng, long, c_main.token_ids, "main")
        assert_greedy(eng, long, c_base.token_ids, None)
        assert c_main.token_ids != c_base.token_ids
    finally:
        eng.close()


def test_a_prompt_prefix_another_row_holds_is_copied_not_computed(
        tiny_model_dir: Path, tmp_path: Path) -> None:
    """Prompts that start alike (the n mains of a problem: the same statement, then each its
    own helper code) compute their common prefix once, under the same adapter only; the
    rows that copied it still get what the model, run on their prompt alone, ranks first."""
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    try:
        eng.load_adapter("main", str(make_adapter(tiny_model_dir, tmp_path / "m", seed=2)))
        statement = "Implement `f` for this problem: " + "a long shared statement, " * 8
        first = _prompt(eng, statement + "Helper: one.")
        second = _prompt(eng, statement + "Helper: two, another one.")
        ids1, ids2 = eng.encode(first), eng.encode(second)
        common = next(i for i, (a, b) in enumerate(zip(ids1, ids2)) if a != b)
        assert common > 40
        batcher = eng.batcher()
        greedy = SamplingParams(n=1, max_new_tokens=10, temperature=0.0)
        got = {}
        for adapter in ("main", None):
            before = batcher.reused_tokens
            with traced(eng) as forwards:
                a = eng.submit(GenerationRequest(first, greedy.with_(max_new_tokens=40),
                                                 adapter=adapter))
                deadline = time.time() + 60
                while not any(f.decode for f in forwards) and time.time() < deadline:
                    time.sleep(0.005)  # the first prompt is in the cache: its row decodes
                b = eng.submit(GenerationRequest(second, greedy, adapter=adapter))
                a.result(120)
                (got[adapter],) = b.result(120)
            assert batcher.reused_tokens - before == common
            assert [c for f in forwards for c in f.chunks] == [len(ids1), len(ids2) - common]
            assert_greedy(eng, second, got[adapter].token_ids, adapter)
        # Another adapter's cache is not this one's: a main row never copies a base row's.
        before = batcher.reused_tokens
        with traced(eng) as forwards:
            a = eng.submit(GenerationRequest(first, greedy.with_(max_new_tokens=40)))
            deadline = time.time() + 60
            while not any(f.decode for f in forwards) and time.time() < deadline:
                time.sleep(0.005)
            b = eng.submit(GenerationRequest(second, greedy, adapter="main"))
            a.result(120), b.result(120)
        assert batcher.reused_tokens == before
    finally:
        eng.close()


def test_close_stops_the_decode_thread_mid_generation(tiny_model_dir: Path) -> None:
    """A process that exits while the decode thread is inside torch aborts ("terminate called
    without an active exception"): close() must wait for the thread, failing what was waiting."""
    before = set(threading.enumerate())
    with TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=4) as eng:  # closes
        started = threading.Event()
        params = SamplingParams(n=2, max_new_tokens=100_000, temperature=1.0, seed=3)
        sub = eng.submit(GenerationRequest(_prompt(eng, "Long one."), params),
                         lambda *_: started.set())
        assert started.wait(60)
        decode = [t for t in set(threading.enumerate()) - before if t.name == "coopcode-decode"]
        assert len(decode) == 1
    assert not decode[0].is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        sub.result(5)


class _SlowBatchEngine(TransformersEngine):
    """The embedded model behind the generic batch path (`generate` only), as vLLM in-process uses."""

    submit = Engine.submit
    submit_all = Engine.submit_all

    def generate(self, requests: Any, on_delta: Any = None, cancel: Any = None) -> Any:
        self.entered.set()
        while not cancel.wait(0.01):
            pass
        return [[Completion("", 0, "cancelled")] * r.params.n for r in requests]


def test_close_stops_the_generic_batcher_of_a_batch_engine(tiny_model_dir: Path) -> None:
    eng = _SlowBatchEngine(str(tiny_model_dir), dtype="float32")
    eng.entered = threading.Event()
    before = set(threading.enumerate())
    first = eng.submit(GenerationRequest("a", SamplingParams(n=1, max_new_tokens=5)))
    assert eng.entered.wait(30)
    queued = eng.submit(GenerationRequest("b", SamplingParams(n=1, max_new_tokens=5)))
    worker = [t for t in set(threading.enumerate()) - before if t.name.endswith("-batcher")]
    eng.close()
    assert worker and not any(t.is_alive() for t in worker)
    assert [c.finish_reason for c in first.result(5)] == ["cancelled"]
    with pytest.raises(RuntimeError, match="closed"):
        queued.result(5)


@pytest.mark.model
def test_a_program_that_never_closes_the_engine_still_exits_cleanly() -> None:
    """A script that generates and ends without `close()` must not die at exit: the decode
    thread is stopped before the interpreter tears torch down (it aborted about one run in
    two with the embedded 0.5B model, "terminate called without an active exception", exit
    code 134; the tiny model never showed it)."""
    import subprocess
    import sys

    code = ("from coopcode.engines.embedded.engine import TransformersEngine\n"
            "from coopcode.engines import GenerationRequest, SamplingParams\n"
            "e = TransformersEngine(None)\n"
            "e.generate([GenerationRequest('def f():', SamplingParams(n=4, max_new_tokens=8))])\n"
            "print('done')\n")
    for _ in range(4):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=300)
        assert (done.returncode, done.stdout.strip()) == (0, "done"), done.stderr[-2000:]
        assert "terminate called" not in done.stderr


def test_the_sampler_draws_from_each_rows_nucleus_in_buffers_kept_between_steps() -> None:
    """`pick_tokens` works in scratch buffers it keeps from step to step (fresh ones cost
    more than the arithmetic); what it draws is what the plain formula gives each row: the
    full softmax at the row's temperature, its top-p nucleus, a draw from the row's own
    generator; greedy rows take the argmax. Checked over steps of different sizes sharing
    one workspace, rows of mixed settings, and bf16 logits as the model returns them."""
    import torch

    from coopcode.engines.embedded.batching import TOP_K_PREFILTER, Workspace, pick_tokens

    class Settings:
        def __init__(self, seed: int, temperature: float, top_p: float) -> None:
            self.temperature, self.top_p = temperature, top_p
            self.generator = torch.Generator().manual_seed(seed)

    def reference(row: torch.Tensor, s: Settings) -> int:
        if s.temperature <= 0:
            return int(row.float().argmax())
        p = torch.softmax(row.float() / s.temperature, dim=-1)
        if s.top_p >= 1.0:  # the whole vocabulary, in its own order
            return int(torch.multinomial(p, 1, generator=s.generator))
        # The most likely first (topk's order: bf16 logits tie often, and a draw maps its
        # number to the tokens in this order).
        idx = torch.topk(row.float() / s.temperature, TOP_K_PREFILTER).indices
        vals = p[idx]
        vals = vals * ((torch.cumsum(vals, dim=-1) - vals) < s.top_p)
        return int(idx[torch.multinomial(vals / vals.sum(), 1, generator=s.generator)])

    gen = torch.Generator().manual_seed(0)
    work = Workspace()
    settings = [(0.8, 0.95), (1.0, 0.9), (0.0, 1.0), (0.6, 1.0), (0.8, 0.95)]
    most_hot = 0
    for step, rows in enumerate((16, 5, 32, 1, 8)):  # the buffers grow and shrink between steps
        logits = torch.randn(rows, 5000, generator=gen) * 2
        logits[:, :40] += 9  # a peaked head, as a model's
        logits = logits.to(torch.bfloat16)
        picked_with = [(step * 100 + i, *settings[(step + i) % len(settings)]) for i in range(rows)]
        ours = pick_tokens(logits, [Settings(*a) for a in picked_with], work)
        plain = [reference(logits[i], Settings(*a)) for i, a in enumerate(picked_with)]
        assert ours == plain, step
        hot = sum(1 for a in picked_with if a[1] > 0)
        most_hot = max(hot, most_hot)
    assert work.buffers["scaled"].shape == (most_hot, 5000)  # one buffer for every step
