"""The transformers engine on the tiny random Qwen2: batching, seeds, stops, streaming, LoRA."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import make_adapter
from engine_trace import traced

from coopcode.core.errors import ModelError
from coopcode.engines import GenerationRequest, SamplingParams
from coopcode.engines.embedded.cpu_format import cpu_has_bf16, pick_device_and_dtype
from coopcode.engines.embedded.engine import TransformersEngine
from tests.load_helpers import spinning


def _prompt(engine: TransformersEngine, text: str = "Write a function.") -> str:
    return engine.render_chat([{"role": "user", "content": text}])


def test_n_samples_per_request_and_token_budget(tiny_engine: TransformersEngine) -> None:
    params = SamplingParams(n=3, max_new_tokens=12, temperature=1.0, seed=1)
    out = tiny_engine.generate([GenerationRequest(_prompt(tiny_engine), params),
                                GenerationRequest(_prompt(tiny_engine, "Other."), params.with_(n=2))])
    assert [len(o) for o in out] == [3, 2]
    for c in out[0] + out[1]:
        assert 1 <= c.n_tokens <= 12
        assert c.finish_reason in ("length", "stop")
        assert len(c.token_ids) == c.n_tokens
    # Random weights at temperature 1: different samples differ.
    assert len({c.text for c in out[0]}) > 1


def test_samples_do_not_depend_on_their_batch(tiny_deterministic_engine: TransformersEngine) -> None:
    """Each sample has its own generator, seeded by its index: with or without other requests
    in the same call (which reorders the rows), a request's samples are the same text. (The
    deterministic engine, so that batched rounding cannot flip a near-tie: see conftest.)"""
    engine = tiny_deterministic_engine
    prompt = _prompt(engine)
    params = SamplingParams(n=3, max_new_tokens=10, temperature=0.9, seed=7)
    alone = engine.generate([GenerationRequest(prompt, params)])[0]
    other = GenerationRequest(_prompt(engine, "A much longer and different prompt here."),
                              params.with_(n=4, seed=99))
    crowded = engine.generate([other, GenerationRequest(prompt, params)])[1]
    assert [c.text for c in crowded] == [c.text for c in alone]
    reseeded = engine.generate([GenerationRequest(prompt, params.with_(seed=8))])[0]
    assert [c.text for c in reseeded] != [c.text for c in alone]


def test_the_deterministic_engine_generates_each_sample_alone(
        tiny_deterministic_engine: TransformersEngine) -> None:
    with traced(tiny_deterministic_engine) as forwards:
        tiny_deterministic_engine.generate([GenerationRequest(_prompt(tiny_deterministic_engine),
                                                              SamplingParams(n=3, max_new_tokens=4))])
    assert forwards and all(f.rows == 1 and f.decode + len(f.chunks) == 1 for f in forwards)


def test_greedy_is_deterministic(tiny_engine: TransformersEngine) -> None:
    params = SamplingParams(n=2, max_new_tokens=8, temperature=0.0)
    a, b = tiny_engine.generate([GenerationRequest(_prompt(tiny_engine), params)])[0]
    assert a.text == b.text


def test_stop_strings_end_generation_and_are_cut(tiny_deterministic_engine: TransformersEngine) -> None:
    engine = tiny_deterministic_engine  # rows stopping early must not change the others
    prompt = _prompt(engine)
    params = SamplingParams(n=4, max_new_tokens=40, temperature=1.0, seed=3)
    free = engine.generate([GenerationRequest(prompt, params)])[0]
    # Stop on a character each free sample produced after its first few characters.
    for i, c in enumerate(free):
        if len(c.text) < 6:
            continue
        stop = c.text[5]
        cut = engine.generate([GenerationRequest(prompt, params.with_(stop=(stop,)))])[0][i]
        assert cut.finish_reason == "stop"
        assert stop not in cut.text
        assert c.text.startswith(cut.text)
        assert cut.n_tokens <= c.n_tokens


def test_streamed_deltas_add_up_to_the_text(tiny_engine: TransformersEngine) -> None:
    seen: dict[tuple[int, int], str] = {}
    tokens: dict[tuple[int, int], int] = {}

    def on_delta(req: int, sample: int, text: str, n: int) -> None:
        seen[(req, sample)] = seen.get((req, sample), "") + text
        tokens[(req, sample)] = tokens.get((req, sample), 0) + n

    prompt = _prompt(tiny_engine)
    params = SamplingParams(n=3, max_new_tokens=15, temperature=1.0, seed=5, stop=("\n\n",))
    free = tiny_engine.generate([GenerationRequest(prompt, params)], on_delta=on_delta)[0]
    # And with stop strings that cut samples: the held-back text and the stop string's own
    # tokens are still counted, in the last delta.
    stops = tuple({c.text[4] for c in free if len(c.text) > 4})
    cut = tiny_engine.generate([GenerationRequest(prompt, params.with_(stop=stops))],
                               on_delta=lambda r, s, t, n: on_delta(r + 1, s, t, n))[0]
    assert any(c.finish_reason == "stop" for c in cut)
    for r, out in enumerate((free, cut)):
        for s, c in enumerate(out):
            assert seen.get((r, s), "") == c.text
            assert tokens[(r, s)] == c.n_tokens


def test_cancel_stops_generation(tiny_engine: TransformersEngine) -> None:
    cancel = threading.Event()
    calls = []

    def on_delta(req: int, sample: int, text: str, tokens: int) -> None:
        calls.append(text)
        if len(calls) > 3:
            cancel.set()

    params = SamplingParams(n=1, max_new_tokens=200, temperature=1.0, seed=1)
    (c,) = tiny_engine.generate([GenerationRequest(_prompt(tiny_engine), params)],
                                on_delta=on_delta, cancel=cancel)[0]
    assert c.finish_reason == "cancelled"
    assert c.n_tokens < 50


def test_the_number_format_is_measured_once_per_machine(tmp_path: Path, kernel_memory: Any) -> None:
    """With no --dtype, the CPU format is whichever of bf16 and fp32 multiplies a full batch
    faster here, measured and remembered; an AVX2-only CPU (torch held to AVX2: bf16
    emulated) gets fp32, a CPU with native bf16 gets bf16."""
    import subprocess
    import sys

    import torch

    _, dtype = pick_device_and_dtype("cpu")
    known = kernel_memory.read()
    (entry,) = known.values()
    faster = min(entry["seconds"], key=entry["seconds"].get)
    assert dtype == getattr(torch, faster) == getattr(torch, entry["dtype"])
    if cpu_has_bf16():
        assert entry["dtype"] == "bfloat16", entry
    # Remembered: a planted answer is what the next engine gets, without measuring again.
    entry["dtype"] = "float32" if dtype == torch.bfloat16 else "bfloat16"
    kernel_memory.write(known)
    assert pick_device_and_dtype("cpu")[1] != dtype
    assert pick_device_and_dtype("cpu", "float32")[1] == torch.float32  # --dtype decides
    # Held to AVX2 (torch, oneDNN and MKL, as on an AVX2-only EPYC), bf16 is emulated and
    # fp32 wins the full batch.
    code = ("from coopcode.engines.embedded.cpu_format import measured_cpu_dtype as m; "
            "print(m())")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
           "MKL_ENABLE_INSTRUCTIONS": "AVX2", "COOPCODE_KERNEL_FILE": str(tmp_path / "avx2.json")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "float32", done.stderr[-2000:]


@contextlib.contextmanager
def _spinning(count: int) -> Iterator[None]:
    with spinning(count):
        time.sleep(0.3)  # started
        yield


def test_a_measurement_taken_under_load_is_taken_again_on_a_quiet_machine(
        kernel_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernels timed while other processes compute can rank wrongly, and what is measured is
    kept for good: a measurement taken while others used over a quarter of the CPUs says so
    ("busy": their share), is used while the machine stays busy, and is taken again by the
    first start that finds the machine quiet (for the kernels as for the number format:
    `cpu_format.stands`)."""
    from coopcode.engines.embedded import cpu_format

    with _spinning(1), cpu_format.OthersLoad() as load:  # one spinner: half of 2 CPUs
        time.sleep(0.6)
    cpus = cpu_format._cpu_seconds()
    assert cpus is not None and load.share >= min(0.8 / cpus[1], 0.4), load.share

    monkeypatch.setattr(cpu_format, "_quiet_seen", {})
    with _spinning(os.cpu_count() or 2):
        cpu_format.measured_cpu_dtype()
        (entry,) = kernel_memory.read().values()
        assert entry["busy"] > cpu_format.BUSY_SHARE, entry
        assert not cpu_format.machine_quiet(fresh_for=0)
        cpu_format.measured_cpu_dtype()  # still busy: the measurement stands
        assert kernel_memory.read() == {cpu_format.cpu_key(): entry}
    # Quiet now (the suite's other worker may be busy: "quiet" and "busy" are set so that this
    # start counts as quiet and its measurement as not under load).
    monkeypatch.setattr(cpu_format, "QUIET_SHARE", 1.01)
    monkeypatch.setattr(cpu_format, "BUSY_SHARE", 1.01)
    monkeypatch.setattr(cpu_format, "_quiet_seen", {})
    cpu_format.measured_cpu_dtype()
    (again,) = kernel_memory.read().values()
    assert "busy" not in again and again["seconds"] != entry["seconds"], (entry, again)


def test_kernels_timed_under_load_are_timed_again_on_a_quiet_machine(
        tiny_model_dir: Path, kernel_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels of each kind of forward, as the number format above: timed beside spinning
    processes, marked and kept while the machine is busy, timed again once it is quiet."""
    from coopcode.engines.embedded import cpu_format

    def kernels_entry() -> dict[str, Any]:
        engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=4)
        try:
            engine.batcher()
            return dict(kernel_memory.kernels_entry()[1])
        finally:
            engine.close()

    monkeypatch.setattr(cpu_format, "_quiet_seen", {})
    with _spinning(os.cpu_count() or 2):
        busy = kernels_entry()
        assert busy["busy"] > cpu_format.BUSY_SHARE, busy
        assert kernels_entry() == busy  # still busy: kept
    monkeypatch.setattr(cpu_format, "QUIET_SHARE", 1.01)
    monkeypatch.setattr(cpu_format, "BUSY_SHARE", 1.01)
    monkeypatch.setattr(cpu_format, "_quiet_seen", {})
    quiet = kernels_entry()
    assert "busy" not in quiet and quiet["seconds"] != busy["seconds"], (busy, quiet)


def test_the_measurements_are_kept_in_coopcode_s_cache(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The measured number format (and kernels) go where every other cache of coopcode goes:
    $COOPCODE_CACHE when it is set (they went to ~/.cache whatever it said), else
    ~/.cache/coopcode (XDG_CACHE_HOME's), the file machines measured before still read."""
    from coopcode.engines.embedded.cpu_format import cpu_key, kernel_file, measured_cpu_dtype

    monkeypatch.delenv("COOPCODE_KERNEL_FILE")  # (the suite's: this machine's measurements)
    monkeypatch.delenv("COOPCODE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernel_file() == tmp_path / "xdg" / "coopcode" / "cpu-format.json"
    monkeypatch.setenv("COOPCODE_CACHE", str(tmp_path / "cache"))
    assert kernel_file() == tmp_path / "cache" / "cpu-format.json"
    dtype = measured_cpu_dtype()
    known = json.loads((tmp_path / "cache" / "cpu-format.json").read_text())
    assert known[cpu_key()]["dtype"] == dtype
    assert not (tmp_path / "xdg").exists()


def test_each_kind_of_forward_runs_on_the_kernels_measured_fastest_for_it(
        tiny_model_dir: Path, kernel_memory: Any) -> None:
    """A single row's forward is a matrix-vector product, a batch's a matrix product: which
    kernels do each fastest (oneDNN, torch's own, oneDNN on prepacked weights) is timed on
    the model once and remembered, and each forward switches to its kind's; the process
    is as it was after each."""
    import torch

    from coopcode.engines.embedded import kernel_weights

    engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=4)
    try:
        engine.batcher()
        _, entry = kernel_memory.kernels_entry()
        for kind in entry["seconds"]:  # "one", "many", and "few" with the fused step
            times = entry["seconds"][kind]
            # Fastest first, down to the first kernel that runs any row: only the fused step
            # may be refused a row (an adapter it does not apply), so it never ends a ranking.
            order = sorted(times, key=times.get)
            ends = 1 + next(i for i, way in enumerate(order) if way != "fused")
            assert entry["kernels"][kind] == order[:ends] == engine.kernels[kind]
        assert set(entry["seconds"]) in ({"one", "many"}, {"one", "few", "many"})
        assert engine.describe()["kernels"] == engine.kernels  # what a bench's meta.json says
        assert ("packed" in times) == kernel_weights.can_pack(torch.bfloat16)
        assert "bf16" not in entry["seconds"]["one"]  # the model is bf16 already
        used = {way for ways in engine.kernels.values() for way in ways}
        assert (engine.kernel_weights is not None) == bool({"packed", "fused"} & used)
        assert engine.kernel_weights is None or engine.kernel_weights.ways == {"packed", "fused"} & used
        if kernel_weights.can_pack(torch.bfloat16):
            engine.add_copies({"packed"})
        many = "packed" if kernel_weights.can_pack(torch.bfloat16) else "onednn"
        engine.kernels = {"one": ["aten"], "many": [many]}  # as measured on an EPYC with native bf16
        seen: list[tuple[int, bool, object]] = []
        hook = engine.base.register_forward_pre_hook(
            lambda _m, _a, kw: seen.append((kw["input_ids"].shape[1], torch.backends.mkldnn.enabled,
                                            getattr(kernel_weights._copy_in_use, "way", None))),
            with_kwargs=True)
        prompt = _prompt(engine)
        greedy = SamplingParams(n=1, max_new_tokens=6, temperature=0.0)
        engine.generate([GenerationRequest(prompt, greedy)])
        engine.generate([GenerationRequest(prompt, greedy.with_(n=2))])  # two rows per step
        hook.remove()
        assert {tokens == 1 for tokens, _, _ in seen} == {True, False}
        assert all(enabled == (tokens > 1) for tokens, enabled, _ in seen), seen
        assert all(way == ("packed" if tokens > 1 and many == "packed" else None)
                   for tokens, _, way in seen), seen
        assert torch.backends.mkldnn.enabled and getattr(kernel_weights._copy_in_use, "way", None) is None
    finally:
        engine.close()
    # What was measured is what the next engine runs, and the packed copy (as much memory as
    # the weights) is made only if the choice uses it.
    cache = kernel_memory.read()
    can_pack = kernel_weights.can_pack(torch.bfloat16)
    for remembered in ({"one": ["aten"], "many": ["onednn"]}, {"one": ["aten"], "many": ["packed"]}):
        for v in cache.values():
            if "kernels" in v:
                v["kernels"] = {**remembered, **({"few": remembered["many"]} if "few" in v["seconds"]
                                                 else {})}
        kernel_memory.write(cache)
        engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=4)
        try:
            engine.batcher()
            if remembered["many"] == ["packed"] and not can_pack:
                # Where oneDNN cannot pack bf16 (an AVX2-only CPU), a remembered choice naming
                # "packed" is none of this machine's: it is measured again from what is offered.
                assert "packed" not in {way for ways in engine.kernels.values() for way in ways}
                assert kernel_memory.read()[next(iter(cache))]["kernels"] == engine.kernels
                continue
            packs = remembered["many"] == ["packed"]
            assert (engine.kernel_weights is not None) == packs
            assert engine.kernel_weights is None or engine.kernel_weights.ways == {"packed"}
            kinds = {type(m) for m in engine.base.modules() if isinstance(m, torch.nn.Linear)}
            assert kinds == {kernel_weights.CopiedLinear if packs else torch.nn.Linear}
        finally:
            engine.close()


def test_a_few_rows_run_fused_up_to_the_count_the_fused_step_led_at() -> None:
    """The fused step reads each weight once for all its rows on its own kernel, so a batch's
    kernel can overtake it as rows grow: a "few" step takes rows up to the largest count at
    which it led at every count timed (on an Intel Xeon with AMX, 4), else the most timed,
    ranked by that count's timings."""
    from coopcode.engines.embedded.kernels import Kernel, few_counts, few_crossover

    assert few_counts(32) == [2, 4, 8, 16, 32] and few_counts(8) == [2, 4, 8] and few_counts(2) == [2]
    fused, packed, onednn = Kernel.FUSED, Kernel.PACKED, Kernel.ONEDNN
    leads_then_loses = {2: {fused: 0.035, packed: 0.058, onednn: 0.07},
                        4: {fused: 0.047, packed: 0.060, onednn: 0.07},
                        8: {fused: 0.086, packed: 0.060, onednn: 0.07},
                        32: {fused: 0.188, packed: 0.075, onednn: 0.12}}
    assert few_crossover(leads_then_loses) == (4, leads_then_loses[4])
    always = {2: {fused: 0.02, packed: 0.05}, 32: {fused: 0.04, packed: 0.09}}
    assert few_crossover(always) == (32, always[32])
    never = {2: {fused: 0.06, packed: 0.05}, 32: {fused: 0.2, packed: 0.09}}
    assert few_crossover(never) == (32, never[32])  # as before: ranked at the most rows
    gap = {2: {fused: 0.02, packed: 0.05}, 4: {fused: 0.06, packed: 0.05}, 8: {fused: 0.01, packed: 0.05}}
    assert few_crossover(gap)[0] == 2  # up to the first count it lost at, not past it


def test_the_engine_takes_a_few_rows_fused_only_up_to_the_count_remembered(
        tiny_model_dir: Path, kernel_memory: Any) -> None:
    """Measured once, remembered: the next engine runs "few" steps of up to the remembered
    count on the fused step and larger decode steps on the batch's kernel (an entry from
    before the count was measured: the fused step's most rows, as then)."""
    from coopcode.engines.embedded import kernels

    engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=8)
    try:
        engine.batcher()
        key, entry = kernel_memory.kernels_entry()
        if "few" not in entry["kernels"]:
            pytest.skip("no fused step for this model here: no few-row kind")
        timed = sorted(int(rows) for rows in entry["few_seconds"])
        assert timed == kernels.few_counts(timed[-1])[:len(timed) - 1] + [timed[-1]]
        chosen = entry["few_seconds"][str(entry["few_rows"])]
        assert (entry["few_rows"], chosen) == kernels.few_crossover(
            {int(rows): times for rows, times in entry["few_seconds"].items()})
        assert entry["kernels"]["few"] == kernels.ranked(chosen) == engine.kernels["few"]
        fused = engine.kernel_weights.fused if engine.kernel_weights is not None else None
        assert engine.few_rows == (min(entry["few_rows"], fused.max_rows) if fused else 0)
    finally:
        engine.close()
    cache = kernel_memory.read()
    for few_rows in (2, None):
        cache[key] = {**entry, "kernels": {**entry["kernels"], "few": ["fused", entry["kernels"]["many"][-1]]},
                      "few_rows": few_rows}
        if few_rows is None:
            del cache[key]["few_rows"]
        kernel_memory.write(cache)
        engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=8)
        try:
            engine.batcher()
            most = engine.kernel_weights.fused.max_rows
            assert engine.few_rows == (2 if few_rows else most)
            decode_rows: list[int] = []  # the decode steps that ran on the batch's kernel
            hook = engine.base.register_forward_pre_hook(
                lambda _m, _a, kw, seen=decode_rows: seen.append(kw["input_ids"].shape[1]),
                with_kwargs=True)
            greedy = SamplingParams(n=3, max_new_tokens=6, temperature=0.0)
            outs = engine.generate([GenerationRequest(_prompt(engine), greedy)])
            hook.remove()
            three_row_steps = decode_rows.count(3)
            if few_rows == 2 and most >= 3:
                assert three_row_steps >= 1, decode_rows  # 3 rows > 2: the batch's kernel
            else:
                assert three_row_steps == 0, decode_rows  # up to `most` rows: fused
            assert outs
        finally:
            engine.close()


def test_an_fp32_model_may_give_one_row_a_bf16_copy_of_its_weights(
        tiny_model_dir: Path, kernel_memory: Any) -> None:
    """Where fp32 was measured the format (an AVX2-only CPU), a one-token forward may multiply
    by a bf16 copy of the weights (half the bytes to read): offered, timed, kept only if
    chosen, run with oneDNN off; never where the user asked for fp32 themselves."""
    import torch

    from coopcode.engines.embedded import cpu_format, kernel_weights

    kernel_memory.write({cpu_format.cpu_key(): {"dtype": "float32"}})
    engine = TransformersEngine(str(tiny_model_dir), max_batch=4)  # the format measured: fp32
    try:
        assert engine.dtype == torch.float32 and not engine.dtype_chosen
        engine.batcher()
        cache = kernel_memory.read()
        key, entry = kernel_memory.kernels_entry()
        assert "| bf16 copy" in key and "bf16" in entry["seconds"]["one"]
        assert "bf16" not in entry["seconds"]["many"]
        assert (engine.kernel_weights is not None and "bf16" in engine.kernel_weights.ways) == (
            "bf16" in engine.kernels["one"])
        engine.add_copies({"bf16"})
        engine.kernels = {"one": ["bf16"], "many": ["onednn"]}
        seen: list[tuple[int, bool, object]] = []
        hook = engine.base.register_forward_pre_hook(
            lambda _m, _a, kw: seen.append((kw["input_ids"].shape[1], torch.backends.mkldnn.enabled,
                                            getattr(kernel_weights._copy_in_use, "way", None))),
            with_kwargs=True)
        greedy = SamplingParams(n=1, max_new_tokens=6, temperature=0.0)
        engine.generate([GenerationRequest(_prompt(engine), greedy)])
        hook.remove()
        assert all((way, enabled) == (("bf16", False) if tokens == 1 else (None, True))
                   for tokens, enabled, way in seen), seen
        assert any(tokens == 1 for tokens, _, _ in seen)
    finally:
        engine.close()
    # The next engine runs what was remembered: the bf16 copy made only when chosen.
    for one in ("aten", "bf16"):
        for v in cache.values():
            if "kernels" in v:
                v["kernels"] = {"one": [one], "many": ["onednn"],
                                **({"few": ["onednn"]} if "few" in v["seconds"] else {})}
        kernel_memory.write(cache)
        engine = TransformersEngine(str(tiny_model_dir), max_batch=4)
        try:
            engine.batcher()
            assert engine.kernels["one"] == [one]
            assert (engine.kernel_weights.ways if engine.kernel_weights else set()) == ({"bf16"} if one == "bf16" else set())
        finally:
            engine.close()
    # `--dtype float32`: every product in fp32, as asked.
    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=4)
    try:
        engine.batcher()
        assert not {"bf16", "fused"} & set(engine.kernels["one"])
        assert engine.kernel_weights is None or not engine.kernel_weights.ways & {"bf16", "fused"}
        assert all(m.coop_bf16 is None for m in engine.base.modules()
                   if isinstance(m, kernel_weights.CopiedLinear))
    finally:
        engine.close()


@pytest.mark.parametrize(("way", "dtype"), [("packed", "float32"), ("packed", "bfloat16"),
                                            ("bf16", "float32")])
def test_copies_of_the_weights_compute_what_the_plain_ones_do(tiny_model_dir: Path, way: str,
                                                              dtype: str) -> None:
    """oneDNN's prepacked layout changes where the weights sit, not what is computed; a bf16
    copy of fp32 weights rounds the products' inputs only: the logits of a forward agree with
    the plain weights' (a bf16 copy's to within bf16 rounding); outside `active()` (another
    thread, a trainer's forward with gradients) the layers are plain ones; `remove` undoes it."""
    import threading

    import torch

    from coopcode.engines.embedded import kernel_weights

    if way == "packed" and not kernel_weights.can_pack(getattr(torch, dtype)):
        pytest.skip(f"oneDNN cannot pack {dtype} weights on this CPU")
    engine = TransformersEngine(str(tiny_model_dir), dtype=dtype, max_batch=4)
    ids = torch.tensor([engine.encode(_prompt(engine))])
    with torch.inference_mode():
        plain = engine.base(input_ids=ids).logits.float()
    copies = kernel_weights.KernelWeights(engine.base, {way})
    assert copies.layers and all(type(m) is kernel_weights.CopiedLinear for m in copies.layers)
    used: list[object] = []
    hook = copies.layers[0].register_forward_hook(
        lambda m, _a, _o: used.append(getattr(kernel_weights._copy_in_use, "way", None)))
    with torch.inference_mode():
        with copies.active(way):
            ours = engine.base(input_ids=ids).logits.float()
            elsewhere: list[object] = []
            t = threading.Thread(target=lambda: elsewhere.append(engine.base(input_ids=ids).logits))
            t.start()
            t.join()
        if way == "packed" and dtype == "float32":
            assert torch.allclose(ours, plain, atol=1e-5, rtol=1e-5), float((ours - plain).abs().max())
        else:
            assert torch.allclose(ours, plain, atol=0.05, rtol=0.02), float((ours - plain).abs().max())
        if way == "bf16":
            assert not torch.equal(ours, plain)  # the copy's products did run
        # The same top token wherever the plain logits do not nearly tie.
        top2 = plain.topk(2, dim=-1).values
        clear = (top2[..., 0] - top2[..., 1]) > 0.1
        assert torch.equal(ours.argmax(-1)[clear], plain.argmax(-1)[clear])
        assert torch.equal(elsewhere[0].float(), plain)
    assert used == [way, None]
    torch.set_grad_enabled(True)
    try:
        x = torch.randn(2, copies.layers[0].in_features, dtype=getattr(torch, dtype), requires_grad=True)
        copies.layers[0](x).sum().backward()  # the plain product, with its gradient
        assert x.grad is not None
    finally:
        torch.set_grad_enabled(False)
    hook.remove()
    copies.keep(())
    assert not copies.ways and all(m.coop_packed is None and m.coop_bf16 is None for m in copies.layers)
    copies.remove()
    assert all(type(m) is torch.nn.Linear and not any(a.startswith("coop_") for a in vars(m))
               for m in kernel_weights.plain_linears(engine.base))
    engine.close()


def test_an_idle_thread_gives_its_cpu_workers_back(tiny_model_dir: Path) -> None:
    """A thread that has run a parallel kernel keeps a team of OpenMP workers, which slow the
    thread that computes next (BENCHMARKS: a one-token forward 50 vs 36 ms); `release` lets
    them go, and the engine's decode loop and the threads that submit to it both call it."""
    import torch

    from coopcode.engines.embedded import cpu_threads

    if torch.get_num_threads() < 2:
        pytest.skip("one CPU thread: no OpenMP workers to give back")
    tasks = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731
    seen: dict[str, int | bool] = {}

    def work() -> None:
        torch.ones(1 << 22).sum()  # a parallel kernel: this thread gets its team
        seen["working"] = tasks()
        seen["released"] = cpu_threads.release()
        seen["idle"] = tasks()

    worker = threading.Thread(target=work)
    worker.start()
    worker.join()
    assert seen["released"] is True
    assert seen["idle"] == seen["working"] - (torch.get_num_threads() - 1)

    callers: list[str] = []
    real = cpu_threads.release

    def noted() -> bool:
        callers.append(threading.current_thread().name)
        return real()

    engine = TransformersEngine(str(tiny_model_dir), dtype="float32", max_batch=4)
    try:
        engine.batcher()
        cpu_threads.release = noted
        engine.generate([GenerationRequest(_prompt(engine), SamplingParams(n=2, max_new_tokens=4))])
        for _ in range(100):  # the loop goes idle just after the last row finishes
            if "coopcode-decode" in callers:
                break
            threading.Event().wait(0.02)
    finally:
        cpu_threads.release = real
        engine.close()
    assert "coopcode-decode" in callers and threading.current_thread().name in callers


def test_two_adapters_on_one_base(tiny_model_dir: Path, tmp_path: Path) -> None:
    engine = TransformersEngine(str(tiny_model_dir), dtype="float32")
    helper = make_adapter(tiny_model_dir, tmp_path / "helper", seed=1)
    main = make_adapter(tiny_model_dir, tmp_path / "main", seed=2)
    engine.load_adapter("helper", str(helper))
    engine.load_adapter("main", str(main))
    assert set(engine.adapters()) == {"helper", "main"}
    prompt = _prompt(engine)
    params = SamplingParams(n=1, max_new_tokens=10, temperature=0.0)
    out = engine.generate([GenerationRequest(prompt, params, adapter=None),
                           GenerationRequest(prompt, params, adapter="helper"),
                           GenerationRequest(prompt, params, adapter="main"),
                           GenerationRequest(prompt, params, adapter=None)])
    texts = [o[0].text for o in out]
    # Random LoRA weights change greedy output; the bare base is unchanged by loading them.
    assert texts[0] == texts[3]
    assert len({texts[0], texts[1], texts[2]}) == 3
    # One base in memory: the adapters are a tiny fraction of it.
    base_params = sum(p.numel() for n, p in engine.peft.named_parameters() if "lora_" not in n)
    lora_params = sum(p.numel() for n, p in engine.peft.named_parameters() if "lora_" in n)
    assert lora_params < 0.05 * base_params


def test_bad_adapters_are_refused_with_one_line(tiny_model_dir: Path, tmp_path: Path) -> None:
    engine = TransformersEngine(str(tiny_model_dir), dtype="float32")
    with pytest.raises(ModelError, match="no such folder"):
        engine.load_adapter("x", str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelError, match="not a PEFT adapter"):
        engine.load_adapter("x", str(tmp_path / "empty"))
    # An adapter whose manifest says it was trained on another base.
    adapter = make_adapter(tiny_model_dir, tmp_path / "other" / "main", seed=3)
    (tmp_path / "other" / "manifest.json").write_text(json.dumps(
        {"base": {"name": "qwen2.5-coder-1.5b-instruct", "fingerprint": "f" * 64}}))
    with pytest.raises(ModelError, match="was trained on qwen2.5-coder-1.5b-instruct"):
        engine.load_adapter("x", str(adapter))


def test_adapter_with_other_shapes_is_refused(tiny_model_dir: Path, tmp_path: Path) -> None:
    from coopcode.models.tiny import make_tiny_model

    wider = make_tiny_model(tmp_path / "wider", hidden=96)
    adapter = make_adapter(wider, tmp_path / "wide-adapter", seed=1)
    engine = TransformersEngine(str(tiny_model_dir), dtype="float32")
    with pytest.raises(ModelError, match="different base"):
        engine.load_adapter("x", str(adapter))


def test_batched_greedy_matches_the_model_on_each_prompt_alone(tiny_engine: TransformersEngine) -> None:
    """Our decode loop (shared prefill, left padding, rows leaving the batch) picks, at every
    step, the token a plain forward pass of the model over that prompt alone ranks first.

    Up to rounding: the batch rounds differently from the lone pass, so where two logits tie
    to within that rounding either is greedy (an exact comparison with `generate` would fail
    on such a near-tie now and then). Teacher forcing checks every step even after one."""

    from coopcode.engines.embedded import kernel_weights

    prompts = [_prompt(tiny_engine), _prompt(tiny_engine, "A much longer and different prompt, "
                                                          "so that the first one is padded.")]
    params = SamplingParams(n=2, max_new_tokens=12, temperature=0.0)
    tiny_engine.batcher()
    chosen, copies = dict(tiny_engine.kernels), tiny_engine.kernel_weights
    had = set(copies.ways) if copies is not None else set()
    ways = ["onednn", "aten", "bf16"]
    if kernel_weights.can_pack(tiny_engine.base.dtype):
        ways.append("packed")
    tiny_engine.add_copies(set(ways) & set(kernel_weights.WAYS))
    try:
        for way in ways:  # every kernel the engine may choose, for both kinds of forward
            tiny_engine.kernels = {"one": [way], "many": [{"bf16": "onednn"}.get(way, way)]}
            # A bf16 copy rounds the one-token products' inputs: greedy up to that rounding.
            _check_greedy(tiny_engine, prompts, tiny_engine.generate(
                [GenerationRequest(p, params) for p in prompts]),
                tolerance=0.05 if way == "bf16" else 1e-4)
    finally:
        tiny_engine.kernels = chosen
        if copies is None:
            tiny_engine.kernel_weights.remove()
            tiny_engine.kernel_weights = None
        else:
            copies.keep(had)


def _check_greedy(tiny_engine: TransformersEngine, prompts: list[str], ours: list,
                  tolerance: float = 1e-4) -> None:
    import torch

    for prompt, samples in zip(prompts, ours):
        ids = tiny_engine.encode(prompt)
        for c in samples:
            with torch.inference_mode():
                logits = tiny_engine.base(torch.tensor([ids + c.token_ids])).logits[0].float()
            steps = logits[len(ids) - 1:len(ids) - 1 + len(c.token_ids)]
            picked = steps.gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
            gap = steps.max(dim=-1).values - picked
            assert float(gap.max()) <= tolerance, gap.tolist()
            assert len(c.token_ids) == 12 or c.token_ids[-1] in tiny_engine.eos_ids


def test_shared_prompt_is_prefilled_once_and_finished_rows_leave(
        tiny_engine: TransformersEngine) -> None:
    """n samples of one prompt cost one prefill of it; a row that has stopped is not stepped."""
    prompt = _prompt(tiny_engine)
    free = tiny_engine.generate([GenerationRequest(prompt, SamplingParams(
        n=4, max_new_tokens=30, temperature=1.0, seed=3))])[0]
    # Stop on a character that sample 0 produces strictly before any other sample does (and
    # before the others end). Until the first row leaves, the batch is the same as `free`'s,
    # so its arithmetic is too: sample 0 stops there, and the others step on without it.
    stop = _first_stop_only_in_row_0(tiny_engine, free)
    with traced(tiny_engine) as forwards:
        out = tiny_engine.generate([GenerationRequest(prompt, SamplingParams(
            n=4, max_new_tokens=30, temperature=1.0, seed=3, stop=(stop,)))])[0]
    n_prompt = tiny_engine.count_tokens(prompt)
    assert forwards[0].chunks == [n_prompt] and forwards[0].decode == 0  # one prefill, 4 rows
    assert all(not f.chunks for f in forwards[1:])
    # A row with t tokens takes part in t - 1 decode steps: its first token comes from the
    # prefill and its last one ends it.
    assert sum(f.decode for f in forwards[1:]) == sum(c.n_tokens - 1 for c in out)
    assert out[0].finish_reason == "stop"
    assert len({c.n_tokens for c in out}) > 1  # rows did finish at different steps


def _first_stop_only_in_row_0(engine: TransformersEngine, free: list) -> str:
    def tokens_until(c: object, ch: str) -> int:  # tokens sampled when `ch` first shows
        for t in range(1, len(c.token_ids) + 1):  # type: ignore[attr-defined]
            if ch in engine.tokenizer.decode(c.token_ids[:t]):  # type: ignore[attr-defined]
                return t
        return 10**9

    for ch in dict.fromkeys(free[0].text[2:]):
        t0 = tokens_until(free[0], ch)
        if ch.strip() and all(t0 < min(tokens_until(c, ch), c.n_tokens) for c in free[1:]):
            return ch
    raise AssertionError("no character sample 0 produces first: pick another seed")


def test_copies_of_the_weights_are_offered_only_as_far_as_they_fit(
        tiny_model_dir: Path, kernel_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies cost memory (prepacked: the weights again; bf16 of fp32: half; the fused
    step's pairs: as much as bf16): the engine
    offers them only while they fit in half of what the kernel says is available, prepacked
    ones first (a batch's speed is what benches and training wait on)."""
    import torch

    from coopcode.engines.embedded import cpu_format, fused_decode, kernel_weights

    kernel_memory.write({cpu_format.cpu_key(): {"dtype": "float32"}})
    engine = TransformersEngine(str(tiny_model_dir), max_batch=4)  # fp32, measured
    try:
        packed = kernel_weights.copy_bytes(engine.base, ["packed"])
        bf16 = kernel_weights.copy_bytes(engine.base, ["bf16"])
        assert packed == 2 * bf16 > 0
        packs = kernel_weights.can_pack(torch.float32)
        first = packed if packs else 0  # what the prepacked copy takes where it can be made
        # The fused step (where it runs here) shares the bf16 copy: offered with it; with bf16
        # dot products it packs those weights in pairs as well (as many bytes again).
        fused = fused_decode.unsupported(engine.base) is None
        both = {"packed", "bf16"} | ({"fused"} if fused else set())
        pairs = bf16 if fused and (fused_decode.isa_level() or 0) >= 2 else 0
        assert kernel_weights.copy_bytes(engine.base, ["fused"]) == bf16 + pairs
        every = first + bf16 + pairs
        cases = [(10 * every, both), (2 * every, both),
                 (2 * every - 2, {"packed"} if packs else set())]
        if packs:
            cases.append((2 * packed - 2, set()))
        for available, ways in cases:
            monkeypatch.setattr(kernel_weights, "memory_available", lambda a=available: a)
            ways = ways if packs else ways - {"packed"}
            options = engine._kernel_options()
            assert set(options["one"]) - {"onednn", "aten"} == ways, (available, options)
            assert set(options["many"]) - {"onednn"} == ways & {"packed"}
    finally:
        engine.close()
