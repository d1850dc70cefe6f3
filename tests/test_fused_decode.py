"""The fused one-token decode step (`coopcode.engines.embedded.fused_decode`) on the tiny random Qwen2:
the model's logits and cache on every kernel level, LoRA adapters in the step, the engine's
use of it for lone rows, and what it refuses."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from adapter_helpers import make_adapter

from coopcode.engines import GenerationRequest, SamplingParams
from coopcode.engines.embedded import fused_decode
from coopcode.engines.embedded.engine import TransformersEngine

LEVEL = fused_decode.isa_level()


def _built() -> str | None:
    """Why the kernel cannot be had here (no AVX2, no compiler: `make tools` installs g++
    as root), or None; builds it on first use."""
    if LEVEL is None:
        return "the CPU has no AVX2 and FMA"
    try:
        fused_decode.extension()
    except RuntimeError as exc:
        return str(exc)
    return None


needs_kernel = pytest.mark.skipif("_built() is not None", reason="the fused kernel cannot be built here")
ALL = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _model(tiny_model_dir: Path, dtype: str):  # noqa: ANN202
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=getattr(torch, dtype)).eval()


def _cache(model, slots: int = 3, length: int = 128):  # noqa: ANN001, ANN202
    import torch

    cfg = model.config
    shape = (slots, cfg.num_key_value_heads, length, cfg.hidden_size // cfg.num_attention_heads)
    return ([torch.zeros(shape, dtype=model.dtype) for _ in range(cfg.num_hidden_layers)],
            [torch.zeros(shape, dtype=model.dtype) for _ in range(cfg.num_hidden_layers)])


def _one(fused, token: int, pos: int, slot: int, k, v, adapter: str | None = None):  # noqa: ANN001, ANN202
    """The logits of one row's step."""
    return fused.step([token], [pos], [slot], k, v, [adapter])[0]


@needs_kernel
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_the_fused_step_gives_the_models_logits_and_cache(tiny_model_dir: Path, dtype: str,
                                                          level: int) -> None:
    """Token by token through one slot of a cache, the fused step's logits are the model's
    forward over the whole sequence (to within bf16 rounding of the products' inputs), its
    keys and values are the model's own, the other slots are untouched; on every kernel
    level the CPU has (AVX2, AVX-512, AVX-512 bf16 dot products, AMX tiles), and the same numbers
    whatever the thread count."""
    import torch

    if level > LEVEL:
        pytest.skip(f"kernel level {level} needs a CPU this one is not")
    model = _model(tiny_model_dir, dtype)
    reference = _model(tiny_model_dir, "float32")
    ids = torch.randint(0, 5000, (1, 40), generator=torch.Generator().manual_seed(level))
    with torch.inference_mode():
        out = reference(input_ids=ids, use_cache=True)
    want = out.logits[0]
    fused = fused_decode.FusedDecoder(model, isa=level)
    assert fused.isa == level
    k, v = _cache(model)
    got = torch.stack([_one(fused, int(t), p, 1, k, v) for p, t in enumerate(ids[0])])
    assert got.dtype == torch.float32 and got.shape == want.shape
    error = float((got - want).abs().max())  # 0.3% of the largest logit here; a wrong rotation 5%
    assert error < 0.01 * float(want.abs().max()), error
    top2 = want.topk(2, dim=-1).values
    clear = (top2[:, 0] - top2[:, 1]) > 0.01 * float(want.abs().max())
    assert torch.equal(got.argmax(-1)[clear], want.argmax(-1)[clear])
    tol = 0.02 if dtype == "bfloat16" else 0.01
    for layer, kv in enumerate(out.past_key_values.layers):
        for ours, theirs in ((k[layer], kv.keys), (v[layer], kv.values)):
            assert torch.allclose(ours[1, :, :40].float(), theirs[0].float(), atol=tol, rtol=tol)
            assert not ours[0].any() and not ours[2].any() and not ours[1, :, 40:].any()
    # Each output row is summed by one thread: any thread count gives the very same logits.
    threads = torch.get_num_threads()
    k1, v1 = _cache(model)
    torch.set_num_threads(1)
    try:
        alone = torch.stack([_one(fused, int(t), p, 1, k1, v1) for p, t in enumerate(ids[0])])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(alone, got)


@needs_kernel
def test_the_fused_step_catches_a_wrong_rotation(tiny_model_dir: Path) -> None:
    """The logits check above can fail: the step at the wrong position (keys rotated for
    another place) gives logits off by more than it allows."""
    import torch

    model = _model(tiny_model_dir, "float32")
    ids = torch.randint(0, 5000, (1, 12), generator=torch.Generator().manual_seed(7))
    with torch.inference_mode():
        want = model(input_ids=ids).logits[0]
    fused = fused_decode.FusedDecoder(model)
    k, v = _cache(model)
    got = torch.stack([_one(fused, int(t), p + (p > 5), 0, k, v) for p, t in enumerate(ids[0])])
    assert float((got[7:] - want[7:]).abs().max()) > 0.01 * float(want.abs().max())


@needs_kernel
def test_the_fused_step_applies_a_lora_adapter_and_sees_it_change(tiny_model_dir: Path,
                                                                  tmp_path: Path) -> None:
    """Under a LoRA adapter on every product, the fused step's logits are the PEFT model's;
    the adapter's tensors are read at each step (a trainer's in-place update shows at once),
    one loaded again under the same name is registered again, and one the step does not
    apply (a LoRA bias) is said so (the engine then runs the eager forward)."""
    import torch
    from peft import PeftModel

    model = _model(tiny_model_dir, "float32")
    peft = PeftModel.from_pretrained(
        model, str(make_adapter(tiny_model_dir, tmp_path / "a", seed=5, targets=ALL)),
        adapter_name="main").eval()
    fused = fused_decode.FusedDecoder(model)
    ids = torch.randint(0, 5000, (1, 24), generator=torch.Generator().manual_seed(2))

    def check(adapter: str | None) -> Any:
        with torch.inference_mode():
            if adapter is None:
                with peft.disable_adapter():
                    want = peft(input_ids=ids).logits[0]
            else:
                peft.set_adapter(adapter)
                want = peft(input_ids=ids).logits[0]
        k, v = _cache(model)
        got = torch.stack([_one(fused, int(t), p, 0, k, v, adapter) for p, t in enumerate(ids[0])])
        error = float((got - want).abs().max())  # bf16 rounding of the products' inputs, which
        assert error < 0.02 * float(want.abs().max()), (adapter, error)  # random deltas amplify
        return want

    assert fused.runs("main")
    before = check("main")
    bare = check(None)
    assert float((before - bare).abs().max()) > 0.1 * float(bare.abs().max())  # the adapter counts
    with torch.no_grad():  # as an optimizer step does: in place
        for m in model.modules():
            if hasattr(m, "lora_B") and "main" in m.lora_B:
                m.lora_B["main"].weight.mul_(2.0)
    assert fused.runs("main")
    after = check("main")
    assert float((after - before).abs().max()) > 0.1 * float(before.abs().max())  # a change seen
    peft.delete_adapter("main")
    peft.load_adapter(str(make_adapter(tiny_model_dir, tmp_path / "b", seed=6, targets=ALL)),
                      adapter_name="main")
    assert fused.runs("main")  # new tensors: registered again
    check("main")
    peft.load_adapter(str(make_adapter(tiny_model_dir, tmp_path / "c", seed=7, lora_bias=True)),
                      adapter_name="biased")
    assert not fused.runs("biased")


@needs_kernel
@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_the_fused_step_runs_several_rows_at_once(tiny_model_dir: Path, tmp_path: Path,
                                                  level: int) -> None:
    """Up to `max_rows` rows in one step (64 on AMX tiles, 32 with bf16 dot products, on the
    weights packed in pairs; 8 elsewhere), each at its own position, in its own slot, under its own adapter or
    none: every row's logits and cache are the ones it gets stepping alone (a single row's
    kernel: to within the order of fp32 sums), for every count of rows, on every kernel
    level; wrong rows are refused."""
    import torch
    from peft import PeftModel

    if level > LEVEL:
        pytest.skip(f"kernel level {level} needs a CPU this one is not")
    model = _model(tiny_model_dir, "bfloat16")
    peft = PeftModel.from_pretrained(
        model, str(make_adapter(tiny_model_dir, tmp_path / "a", seed=5, targets=ALL)),
        adapter_name="main").eval()
    peft.load_adapter(str(make_adapter(tiny_model_dir, tmp_path / "b", seed=6, targets=ALL[:4])),
                      adapter_name="helper")
    for name in ("main", "helper"):  # the engine keeps its adapters' weights in fp32
        for m in model.modules():
            if hasattr(m, "lora_A") and name in m.lora_A:
                m.lora_A[name].float()
                m.lora_B[name].float()
    fused = fused_decode.FusedDecoder(model, isa=level)
    assert fused.runs("main") and fused.runs("helper")
    rows = fused.max_rows
    assert rows == {3: 64, 2: 32}.get(level, 8) and fused_decode.MAX_ROWS == 64
    slots = torch.randperm(rows, generator=torch.Generator().manual_seed(3)).tolist()  # not in order
    adapters = [None, "main", "helper", "main", None, "helper", "main", None] * 8
    gap = 2 if rows <= 32 else 1  # (64 rows: joining a step apart keeps the test short)
    starts = [gap * r for r in range(rows)]  # each row joins at its own position: 1 to 64 rows
    ids = torch.randint(0, 5000, (rows, 2 * rows + 6), generator=torch.Generator().manual_seed(11))
    length = max(128, 2 * rows + 8)
    together = _cache(model, slots=rows, length=length)
    alone = _cache(model, slots=rows + 1, length=length)  # slot `rows`: a bare companion row
    single = _cache(model, slots=rows, length=length)
    for p in range(max(starts) + 6):
        live = [r for r in range(rows) if starts[r] <= p]
        step = fused.step([int(ids[r, p - starts[r]]) for r in live], [p - starts[r] for r in live],
                          [slots[r] for r in live], *together, [adapters[r] for r in live])
        for i, r in enumerate(live):
            token, pos = int(ids[r, p - starts[r]]), p - starts[r]
            # Alone beside a bare companion: the same kernel for several rows, so the same sums.
            one = fused.step([token, 0], [pos, 0], [slots[r], rows], *alone, [adapters[r], None])[0]
            assert torch.allclose(step[i], one, rtol=1e-3, atol=1e-3 * float(one.abs().max())), (p, r)
            # Truly alone, on the single row's kernel: the pair kernel sums in another order,
            # and a bf16 rounding that flips grows along the cache (measured: <= 0.26%).
            lone = _one(fused, token, pos, slots[r], *single, adapters[r])
            assert float((step[i] - lone).abs().max()) <= 0.005 * float(lone.abs().max()), (p, r)
    for ours, theirs in zip(together[0] + together[1], alone[0] + alone[1], strict=True):
        assert torch.allclose(ours.float(), theirs[:rows].float(), atol=0.02, rtol=0.02)
    k, v = together
    with pytest.raises(RuntimeError, match="1 to"):
        fused.step([1] * (rows + 1), [0] * (rows + 1), list(range(rows + 1)), k, v)
    with pytest.raises(RuntimeError, match="two rows in one slot"):
        fused.step([1, 2], [0, 0], [3, 3], k, v)
    with pytest.raises(RuntimeError, match="no such cache slot"):
        fused.step([1], [0], [rows], k, v)


@needs_kernel
def test_the_engine_runs_decoding_rows_on_the_fused_step(
        tiny_model_dir: Path, tmp_path: Path, kernel_memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chosen for one-token forwards and for a few decoding rows, the fused step decodes
    every lone row, bare or under a LoRA adapter, and rows in flight together under mixed
    adapters (the model's own forward then runs only where prompts are), greedy to within
    bf16 rounding by teacher forcing; a row under an adapter it does not apply runs the other
    kernel measured fastest, remembered with the choice."""
    import torch


    engine = TransformersEngine(str(tiny_model_dir), dtype="bfloat16", max_batch=4)
    try:
        engine.batcher()
        _, entry = kernel_memory.kernels_entry()
        assert "fused" in entry["seconds"]["one"] and "fused" in entry["seconds"]["few"]
        assert "fused" not in entry["seconds"]["many"]
        engine.add_copies({"fused"})  # where it measured slower for the tiny model: use it anyway
        # Rows under an adapter the fused step does not apply run the next kernel measured.
        engine.kernels = {**engine.kernels, "one": ["fused", "aten"], "few": ["fused", "onednn"]}
        engine.load_adapter("main", str(make_adapter(tiny_model_dir, tmp_path / "main", seed=3,
                                                      targets=ALL)))
        engine.load_adapter("biased", str(make_adapter(tiny_model_dir, tmp_path / "biased", seed=4,
                                                        lora_bias=True)))
        eager: list[int] = []
        hook = engine.base.register_forward_pre_hook(
            lambda _m, a, kw: eager.append(kw.get("input_ids", a and a[0]).shape[1]), with_kwargs=True)
        fused_rows: list[int] = []
        step = engine.kernel_weights.fused.step
        monkeypatch.setattr(engine.kernel_weights.fused, "step",
                            lambda tokens, *a: fused_rows.append(len(tokens)) or step(tokens, *a))
        greedy = SamplingParams(n=1, max_new_tokens=10, temperature=0.0, seed=0)

        def check(prompt: str, adapter: str | None, c: Any) -> None:
            ids = engine.encode(prompt)
            with torch.inference_mode():
                if adapter is None:
                    with engine.peft.disable_adapter():
                        logits = engine.peft(torch.tensor([ids + c.token_ids])).logits[0].float()
                else:
                    engine.peft.set_adapter(adapter)
                    logits = engine.peft(torch.tensor([ids + c.token_ids])).logits[0].float()
            steps = logits[len(ids) - 1:len(ids) - 1 + len(c.token_ids)]
            gap = steps.max(-1).values - steps.gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
            assert float(gap.max()) <= 0.05, (adapter, gap.tolist())  # as for the bf16 copy

        prompts = [engine.render_chat([{"role": "user", "content": f"Write function number {i}."}])
                   for i in range(3)]
        for adapter in (None, "main", "biased"):  # one at a time: lone rows
            eager.clear()
            ((c,),) = engine.generate([GenerationRequest(prompts[0], greedy, adapter=adapter)])
            if adapter == "biased":
                assert eager.count(1) >= 5, eager  # eager one-token forwards
            else:
                assert eager and all(n > 1 for n in eager), eager  # the prompt only: steps fused
            check(prompts[0], adapter, c)
        hook.remove()
        eager.clear()
        fused_rows.clear()
        mixed = [(prompts[0], None), (prompts[1], "main"), (prompts[2], "main")]
        done = engine.generate([GenerationRequest(p, greedy, adapter=a) for p, a in mixed])
        assert max(fused_rows) == 3, fused_rows  # the three rows decoded in one step
        for (p, a), (c,) in zip(mixed, done, strict=True):
            check(p, a, c)
    finally:
        engine.close()


@needs_kernel
def test_a_first_build_of_the_kernel_is_said_while_the_model_loads(
        tiny_model_dir: Path, tmp_path: Path, kernel_memory: Any,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel is not compiled yet (a fresh machine: no build in torch's extension
    folder), the engine builds it while it loads and says so, once; not where it is built,
    nor where `--dtype float32` keeps the fused step off."""
    assert fused_decode.built()  # built by `needs_kernel`
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "fresh"))
    said: list[str] = []
    monkeypatch.setattr(fused_decode, "_built", {})  # as in a new process
    assert not fused_decode.built()
    monkeypatch.setattr(fused_decode, "extension", lambda: said.append("(built)"))
    TransformersEngine(str(tiny_model_dir), dtype="bfloat16", progress=said.append).close()
    assert [m for m in said if "fused" in m or m == "(built)"] == [
        "building the fused decode kernel (once per machine, ~30 s) ...", "(built)"]
    said.clear()
    TransformersEngine(str(tiny_model_dir), dtype="float32", progress=said.append).close()
    assert not [m for m in said if "fused" in m or m == "(built)"]
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR")
    assert fused_decode.built()  # the real folder has the build
    said.clear()
    TransformersEngine(str(tiny_model_dir), dtype="bfloat16", progress=said.append).close()
    assert not [m for m in said if "fused" in m or m == "(built)"]


@needs_kernel
def test_a_lock_left_by_a_killed_build_does_not_hold_up_the_next_engine(tmp_path: Path) -> None:
    """Torch guards a build with a `lock` file it deletes when done: a process killed while
    it held it (Ctrl-C while the first engine loads, the end of a CI job) left the file, and
    every later engine waited for it for ever. With such a leftover in the build's folder (a
    copy of this machine's build), a new process loads the kernel and the leftover is gone."""
    import shutil
    import subprocess
    import sys

    name = fused_decode._name()
    built = fused_decode.build_folder()
    folder = tmp_path / "extensions" / name  # (TORCH_EXTENSIONS_DIR holds the builds themselves)
    shutil.copytree(built, folder, ignore=shutil.ignore_patterns("lock"))
    (folder / "lock").touch()  # what torch's FileBaton leaves when its holder is killed
    code = "from coopcode.engines.embedded import fused_decode as f; print(f.extension().__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TORCH_EXTENSIONS_DIR": str(tmp_path / "extensions")})
    assert done.stdout.strip() == name, done.stderr[-2000:]
    assert not (folder / "lock").exists()


def test_builds_of_earlier_kernel_versions_are_removed_after_a_week(tmp_path: Path) -> None:
    """Each version of the kernel source is its own build in torch's extension folder: those
    of other versions untouched for a week go, the current one and other extensions stay."""
    import os
    import time

    week = 7 * 86400
    folders = {name: tmp_path / name for name in (
        "coopcode_fused_decode_aaaaaaaaaaaa", "coopcode_fused_decode_bbbbbbbbbbbb",
        "coopcode_fused_decode_cccccccccccc", "someone_elses_extension")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / f"{name}.so").write_bytes(b"\0")
        if not name.endswith("bbbb"):  # b: an older version, but used (touched) today
            os.utime(folder, (time.time() - week - 60, time.time() - week - 60))
    gone = fused_decode.remove_stale_builds(tmp_path, keep="coopcode_fused_decode_cccccccccccc")
    assert gone == [folders["coopcode_fused_decode_aaaaaaaaaaaa"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "coopcode_fused_decode_bbbbbbbbbbbb", "coopcode_fused_decode_cccccccccccc",
        "someone_elses_extension"]


def test_what_the_fused_step_does_not_run_is_said(tiny_model_dir: Path) -> None:
    """A model the kernel does not know is refused with the reason (and the engine then
    keeps its eager kernels)."""
    model = _model(tiny_model_dir, "float32")
    if LEVEL is None:
        assert "AVX2" in fused_decode.unsupported(model)
        return
    assert fused_decode.unsupported(model) is None
    model.config.hidden_act = "gelu"
    assert "activation" in fused_decode.unsupported(model)
    model.config.hidden_act = "silu"
    model.config.rope_scaling = {"rope_type": "yarn", "factor": 4.0}
    assert "rotary" in fused_decode.unsupported(model)
    with pytest.raises(RuntimeError, match="cannot run this model"):
        fused_decode.FusedDecoder(model)
