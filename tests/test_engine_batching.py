"""Continuous batching in the embedded engine: requests join a running batch between decode
steps, rows leave when done, the batch stays within its bounds, adapters mix in one batch."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import make_adapter

from coopcode.engines import Completion, GenerationRequest, SamplingParams
from coopcode.engines.base import Engine
from coopcode.engines.transformers_engine import TransformersEngine


def _prompt(engine: TransformersEngine, text: str) -> str:
    return engine.render_chat([{"role": "user", "content": text}])


def assert_greedy(engine: TransformersEngine, prompt: str, token_ids: list[int],
                  adapter: str | None = None) -> None:
    """Every token is the one the model, run on this prompt alone, ranks first (up to
    rounding: a batch rounds differently from a lone pass, see test_engine)."""
    import torch

    ids = engine.encode(prompt)
    with torch.inference_mode():
        out = engine._forward([adapter], input_ids=torch.tensor([ids + token_ids]))
    steps = out.logits[0].float()[len(ids) - 1:len(ids) - 1 + len(token_ids)]
    picked = steps.gather(-1, torch.tensor(token_ids)[:, None])[:, 0]
    gap = steps.max(dim=-1).values - picked
    assert float(gap.max()) <= 1e-4, gap.tolist()


class _Shapes:
    """Records the (rows, width) of every forward pass of the engine's model."""

    def __init__(self, engine: TransformersEngine) -> None:
        self.seen: list[tuple[int, int]] = []
        embed = engine.base.get_input_embeddings()
        self.hook = embed.register_forward_hook(
            lambda _m, args, _o: self.seen.append(tuple(args[0].shape)))

    def __enter__(self) -> _Shapes:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.hook.remove()


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

    with _Shapes(engine) as shapes:
        a = engine.submit(GenerationRequest(first_prompt, long), on_delta)
        assert first_tokens.wait(60)
        b = engine.submit(GenerationRequest(later_prompt, greedy))
        (ca,), (cb,) = a.result(120), b.result(120)
    assert ca.finish_reason == "length" and ca.n_tokens == 200
    # The later request was prefilled alone while the first one was mid-way...
    n_later = len(engine.encode(later_prompt))
    join = shapes.seen.index((1, n_later))
    assert join > 1 and all(s == (1, 1) for s in shapes.seen[1:join])
    # ...then both stepped together until the later one finished.
    assert shapes.seen[join + 1] == (2, 1)
    assert_greedy(engine, later_prompt, cb.token_ids)


def test_the_batch_never_exceeds_max_batch(engine: TransformersEngine) -> None:
    prompts = [_prompt(engine, f"Problem number {i}.") for i in range(3)]
    params = SamplingParams(n=3, max_new_tokens=6, temperature=1.0, seed=2)
    with _Shapes(engine) as shapes:
        out = engine.generate([GenerationRequest(p, params) for p in prompts])
    assert [len(o) for o in out] == [3, 3, 3]
    assert max(rows for rows, _ in shapes.seen) <= 4
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
        eng.submit(GenerationRequest(prompt, SamplingParams(max_new_tokens=1))).result(60)
        eng._batcher.kv_budget_tokens = 2 * room  # type: ignore[union-attr]  # two rows' worth
        with _Shapes(eng) as shapes:
            out = eng.generate([GenerationRequest(prompt, SamplingParams(
                n=5, max_new_tokens=8, temperature=1.0, seed=4))])[0]
        assert len(out) == 5
        assert max(rows for rows, _ in shapes.seen) == 2
    finally:
        eng.close()


def test_helper_main_and_base_rows_step_together(tiny_model_dir: Path, tmp_path: Path) -> None:
    """PEFT's mixed-adapter batches: one decode step serves rows of every adapter, and each
    row gets its own adapter's output (a base row is not given an adapter's weights)."""
    eng = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=8)
    try:
        eng.load_adapter("helper", str(make_adapter(tiny_model_dir, tmp_path / "h", seed=1)))
        eng.load_adapter("main", str(make_adapter(tiny_model_dir, tmp_path / "m", seed=2)))
        prompt = _prompt(eng, "Mixed batch.")
        params = SamplingParams(n=1, max_new_tokens=10, temperature=0.0)
        adapters = [None, "helper", "main"]
        with _Shapes(eng) as shapes:
            out = eng.generate([GenerationRequest(prompt, params, adapter=a) for a in adapters])
        assert shapes.seen[0] == (3, len(eng.encode(prompt)))  # one prefill for three adapters
        assert (3, 1) in shapes.seen
        for adapter, (c,) in zip(adapters, out):
            assert_greedy(eng, prompt, c.token_ids, adapter)
        assert len({c.text for (c,) in out}) == 3
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
