"""Training you can rerun: with `--deterministic`, two runs of the same
config and seed take the same steps: the same samples, rewards, losses and adapter weights,
bit for bit (the tiny model; a reward that varies with the text, so the updates move)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# coopcode before torch: importing coopcode sets OMP_WAIT_POLICY=PASSIVE, which must be in
# place when torch's OpenMP starts (spinning workers made these runs 6x slower on 2 cores).
from coopcode.engines.embedded.engine import TransformersEngine
from coopcode.training import TrainConfig, output_scorer, train

# Measured each step, not decided by the config: what may differ between two runs.
TIMINGS = {"gen_seconds", "score_seconds", "update_seconds", "step_seconds", "tokens_per_s",
           "step_peak_rss_mb", "peak_rss_mb", "rss_mb"}


def _run(model: Path, out: Path) -> None:
    config = TrainConfig(steps=3, group_size=4, max_new_tokens=24, limit=6, problems_per_step=2,
                         save_every=3, seed=7, deterministic=True)
    # The length of main's text mod 7: rewards that differ within a group, so every step
    # has advantages and gradients (the tiny model's programs never pass a test).
    scorer = output_scorer(lambda p, a, n: float(len(n.samples["main"][a.members["main"]].text) % 7))
    engine = TransformersEngine(str(model), dtype="float32", deterministic=True)
    try:
        train(config, out, engine=engine, scorer=scorer)
    finally:
        engine.close()


def test_the_same_config_and_seed_give_the_same_steps(tiny_model_dir: Path, tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    first, second = tmp_path / "first", tmp_path / "second"
    _run(tiny_model_dir, first)
    _run(tiny_model_dir, second)

    def lines(run: Path, name: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (run / name).read_text().splitlines()]

    samples = lines(first, "samples.jsonl")
    assert [s["step"] for s in samples] == [1, 1, 2, 2, 3, 3]
    assert samples == lines(second, "samples.jsonl")  # every agent's code and every reward
    rewards = {a["reward"]["score"] for s in samples for a in s["actions"]}
    assert len(rewards) > 1  # the updates had something to move the weights with
    a, b = lines(first, "metrics.jsonl"), lines(second, "metrics.jsonl")
    assert [{k: v for k, v in r.items() if k not in TIMINGS} for r in a] == \
        [{k: v for k, v in r.items() if k not in TIMINGS} for r in b]
    assert any(r["loss"] != 0.0 for r in a)
    for role in ("helper", "main"):
        wa = load_file(str(first / role / "adapter_model.safetensors"))
        wb = load_file(str(second / role / "adapter_model.safetensors"))
        assert wa.keys() == wb.keys()
        assert all(torch.equal(wa[k], wb[k]) for k in wa), role
        fresh = load_file(str(first / "trainer_state" / "step-000003" / role /
                              "adapter_model.safetensors"))
        assert all(torch.equal(wa[k], fresh[k]) for k in wa)


def test_a_deterministic_run_resumed_on_other_threads_says_so() -> None:
    from coopcode.training.run import _runtime_changed, runtime

    now = runtime()
    other = {**now, "threads": now["threads"] + 1}
    said = _runtime_changed(other, TrainConfig(deterministic=True))
    assert f"threads {now['threads'] + 1} -> {now['threads']}" in said
    assert f"--threads {now['threads'] + 1}" in said
    assert _runtime_changed(now, TrainConfig(deterministic=True)) == ""
    assert _runtime_changed(other, TrainConfig()) == ""  # batched: not bit for bit anyway
