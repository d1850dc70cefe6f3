"""The figures docs/divided-fair/RECORD.md and checkpoints/README.md state about the second
round's warm starts, recounted from the records committed with them."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PAIR = REPO / "checkpoints" / "compose-warm-pair-0.5b"
SOLO = REPO / "checkpoints" / "compose-warm-solo-0.5b"
FIRST_SOLO = REPO / "checkpoints" / "compose-sft-solo-0.5b"


def _history(run: Path) -> list[dict]:
    """A run's metrics.jsonl, one record a line."""
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x]


def _val(run: Path) -> dict[int, dict]:
    return {r["step"]: r for r in _history(run) if "val/pass@1" in r}


def _passing(run: Path, step: int) -> tuple[int, int, dict[str, list[dict]]]:
    path = run / "validation" / f"step-{step:06d}" / "samples.jsonl.gz"
    samples = [json.loads(x) for x in gzip.open(path, "rt")]
    by_task: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_task[s["task_id"]].append(s)
    return sum(bool(s.get("passed")) for s in samples), len(samples), by_task


def test_the_warm_starts_validation_figures_are_their_records() -> None:
    pair, solo = _val(PAIR), _val(SOLO)
    assert sorted(pair) == sorted(solo) == [0, 45]
    assert (pair[0]["val/pass@1"], pair[45]["val/pass@1"]) == pytest.approx((0.025, 0.0688))
    assert pair[45]["val/pass@1_se"] == pytest.approx(0.030, abs=5e-4)
    assert (pair[0]["val/acc@1"], pair[45]["val/acc@1"]) == pytest.approx((0.075, 0.28), abs=5e-4)
    assert pair[45]["val/own_work"] == pytest.approx(0.675) and pair[45]["val/both_needed"] == 1.0
    assert (solo[0]["val/pass@1"], solo[45]["val/pass@1"]) == pytest.approx((0.0688, 0.075))
    assert solo[45]["val/pass@1_se"] == pytest.approx(0.026, abs=5e-4)
    assert (solo[0]["val/acc@1"], solo[45]["val/acc@1"]) == pytest.approx((0.123, 0.276),
                                                                          abs=5e-4)


def test_the_single_warm_start_against_the_first_rounds_is_counted_from_both_validations() -> None:
    new_passed, new_total, new = _passing(SOLO, 45)
    old_passed, old_total, old = _passing(FIRST_SOLO, 45)
    assert (new_passed, new_total) == (12, 160) and (old_passed, old_total) == (13, 80)
    solved_new = {t for t, ss in new.items() if any(s.get("passed") for s in ss)}
    solved_old = {t for t, ss in old.items() if any(s.get("passed") for s in ss)}
    assert (len(solved_new & solved_old), len(solved_old - solved_new),
            len(solved_new - solved_old)) == (5, 5, 4)
    cut = sum(o.get("finish_reason") == "length" for ss in new.values() for s in ss
              for o in s.get("outputs", []))
    assert cut == 2
    # flip_case_of_encrypt: every new sample's aux rotates by 2 (encrypt asks for 4) and fails
    flips = new["compose/flip_case_of_encrypt"]
    assert flips and all(not s.get("passed") and "+ 2) % 26" in s["outputs"][-1]["code"]
                         for s in flips)
    assert "compose/flip_case_of_encrypt" in solved_old


def _rates(by_task: dict[str, list[dict]]) -> dict[str, float]:
    return {t: sum(bool(s.get("passed")) for s in ss) / len(ss) for t, ss in by_task.items()}


def _paired(a: dict[str, float], b: dict[str, float]) -> tuple[float, float]:
    """Mean per-problem difference a - b and its standard error over the shared problems."""
    diffs = [a[t] - b[t] for t in sorted(a.keys() & b.keys())]
    mean = sum(diffs) / len(diffs)
    var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return mean, (var / len(diffs)) ** 0.5


def test_the_first_rounds_single_warm_start_on_the_new_text_is_its_committed_check() -> None:
    check = REPO / "docs" / "divided-fair" / "checks" / "solo-text"
    meta = json.loads((check / "meta.json").read_text())
    assert meta["config"]["problems"] == "compose:val" and meta["config"]["n"] == 4
    assert meta["identity"]["main_adapter"].endswith("compose-sft-solo-0.5b/main")
    samples = [json.loads(x) for x in gzip.open(check / "samples.jsonl.gz", "rt")]
    assert (sum(bool(s["passed"]) for s in samples), len(samples)) == (9, 160)
    by_task: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_task[s["task_id"]].append(s)
    _, _, new = _passing(SOLO, 45)
    _, _, old = _passing(FIRST_SOLO, 45)
    # the old adapter on the new text against the new adapter on it: within one SE
    diff, se = _paired(_rates(by_task), _rates(new))
    assert (round(diff, 3), round(se, 3)) == (-0.019, 0.019)
    # the old adapter on the new text against itself on the old text: 2.6 SE lower
    diff, se = _paired(_rates(by_task), _rates(old))
    assert (round(diff, 3), round(se, 3)) == (-0.106, 0.041)


ANCHORED = REPO / "docs" / "divided-fair" / "candidates" / "anchored"


def test_the_anchored_candidates_curve_and_kept_step_are_its_committed_validations() -> None:
    """RECORD.md's table of the anchored candidate: each validation's pass@1 counted from its
    samples, the paired differences to step 0 over the 40 problems, and the step the tool's
    rule keeps from those samples (step 30: step 45 leads it by 1.8 SE only)."""
    from coopcode.training.validation import evaluations, keep

    counted = _rates_by_step(ANCHORED)
    assert {s: round(100 * sum(v.values()) / 40, 1) for s, v in counted.items()} == {
        0: 10.0, 15: 10.6, 30: 15.0, 45: 21.2}

    def paired(a: int, b: int) -> tuple[float, float]:
        d = [counted[a][t] - counted[b][t] for t in counted[a]]
        mean = sum(d) / len(d)
        se = (sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d)) ** 0.5
        return round(100 * mean, 1), round(100 * se, 1)

    assert [paired(s, 0) for s in (15, 30, 45)] == [(0.6, 2.8), (5.0, 3.0), (11.2, 3.7)]
    assert paired(45, 30) == (6.2, 3.4)
    history = _history(ANCHORED)
    kept = keep(evaluations(ANCHORED, history))
    assert kept is not None and (kept["step"], kept["best"], kept["preferred"]) == (30, 45, False)
    assert json.loads((ANCHORED / "manifest.json").read_text())["kept"]["step"] == 30


NO_KL = REPO / "docs" / "divided-fair" / "candidates" / "no-kl"


def _rates_by_step(run: Path, steps: tuple[int, ...] = (0, 15, 30, 45)) -> dict[int, dict[str, float]]:
    out = {}
    for step in steps:
        _, total, by_task = _passing(run, step)
        assert (total, len(by_task)) == (160, 40)
        out[step] = _rates(by_task)
    return out


def test_the_no_kl_candidates_curve_and_kept_step_are_its_committed_validations() -> None:
    """RECORD.md's table of the no-kl candidate (the anchored recipe without its KL to the
    warm start): flat, so the tool keeps step 0; at step 45 the anchored candidate leads it by
    11.2 points (paired over the same 40 problems)."""
    from coopcode.training.validation import evaluations, keep

    no_kl, anchored = _rates_by_step(NO_KL), _rates_by_step(ANCHORED)
    assert {s: round(100 * sum(v.values()) / 40, 1) for s, v in no_kl.items()} == {
        0: 10.0, 15: 11.2, 30: 11.2, 45: 10.0}
    assert no_kl[0] == anchored[0]  # the same warm pair, seed and samples
    rounded = [tuple(round(100 * x, 1) for x in _paired(no_kl[s], no_kl[0])) for s in (15, 30, 45)]
    assert rounded == [(1.2, 2.5), (1.2, 3.3), (0.0, 3.1)]
    assert tuple(round(100 * x, 1) for x in _paired(anchored[45], no_kl[45])) == (11.2, 2.8)
    history = _history(NO_KL)
    kept = keep(evaluations(NO_KL, history))
    assert kept is not None and (kept["step"], kept["best"], kept["preferred"]) == (0, 15, False)
    assert json.loads((NO_KL / "manifest.json").read_text())["kept"]["step"] == 0
    # the training metrics RECORD.md quotes
    steps = [r for r in history if r["step"] > 0]
    assert len(steps) == 45 and all(r["main/constant_answers"] == 0 for r in steps)
    assert [(r["step"], round(r["main/grad_norm"])) for r in steps
            if r["main/grad_norm"] > 150] == [(39, 308), (41, 218)]
    mean = lambda key, rows: round(sum(r[key] for r in rows) / len(rows), 2)  # noqa: E731
    assert (mean("reward/mean", steps[:10]), mean("reward/mean", steps[-10:])) == (1.41, 1.49)
    assert (mean("pass_rate", steps[:10]), mean("pass_rate", steps[-10:])) == (0.18, 0.25)
    assert [round(100 * r["val/own_work"]) for r in history if "val/own_work" in r] == [
        70, 73, 74, 69]


def test_what_the_anchored_kept_step_writes_is_counted_from_its_samples() -> None:
    """RECORD.md: of the 160 step-30 validation samples, 139 mains end by returning an outer
    function applied to aux's answer and 143 define a function inside the entry point."""
    path = ANCHORED / "validation" / "step-000030" / "samples.jsonl.gz"
    mains = [json.loads(x)["main_code"] for x in gzip.open(path, "rt")]
    assert len(mains) == 160
    assert sum(bool(re.search(r"return \w+\(aux\(", m)) for m in mains) == 139
    assert sum(bool(re.search(r"^\s+def \w+\(", m, re.M)) for m in mains) == 143


def test_the_one_lr_candidates_first_steps_are_its_committed_record() -> None:
    """RECORD.md on one-lr's first 12 steps (its record kept mid-run): step times and main's
    two gradient spikes, with main at the helper's rate."""
    run = REPO / "docs" / "divided-fair" / "candidates" / "one-lr"
    history = _history(run)
    first = [r for r in history if 0 < r["step"] <= 12]
    assert len(first) == 12 and (min(r["step_seconds"] for r in first),
                                 max(r["step_seconds"] for r in first)) == pytest.approx(
        (126, 262), abs=0.5)
    assert sum(r["step_seconds"] for r in first) / 12 == pytest.approx(170, abs=1)
    spikes = [(r["step"], round(r["main/grad_norm"])) for r in first if r["main/grad_norm"] > 210]
    assert spikes == [(8, 779), (9, 1745)] and round(first[9]["main/grad_norm"]) == 53
    assert max(r["helper/grad_norm"] for r in first) < 97
    assert {r["step"]: r["main/lr"] == r["helper/lr"] for r in first} == dict.fromkeys(range(1, 13), True)


def test_the_step_and_validation_times_behind_the_no_cut_decision_are_the_candidates() -> None:
    """RECORD.md, no further cut: each finished candidate's four validations (minutes) and its
    mean step (seconds)."""
    found = {}
    for run in (NO_KL, ANCHORED):
        history = _history(run)
        steps = [r["step_seconds"] for r in history if "step_seconds" in r]
        vals = [r["val/seconds"] for r in history if "val/seconds" in r]
        assert len(steps) == 45 and len(vals) == 4
        found[run.name] = (round(sum(vals) / 60, 1), round(sum(steps) / len(steps)))
    assert found == {"no-kl": (19.6, 124), "anchored": (22.8, 217)}


def test_the_one_lr_candidate_finished_is_its_committed_record() -> None:
    """RECORD.md on one-lr, to step 40 and then finished: step times, validations, the step it
    kept, main's gradient spikes and the KL they came with, against the anchored candidate's KL."""
    run = REPO / "docs" / "divided-fair" / "candidates" / "one-lr"
    history = _history(run)
    later = [r for r in history if 16 <= r["step"] <= 40]
    times = [r["step_seconds"] for r in later]
    assert len(later) == 25 and (round(min(times)), round(max(times)), round(sum(times) / 25, 1)) \
        == (128, 236, 167.9)
    last = [r["step_seconds"] for r in history if r["step"] > 40]
    assert len(last) == 5 and (round(min(last)), round(max(last))) == (141, 163)
    every = [r["step_seconds"] for r in history if r["step"] > 0]
    assert len(every) == 45 and round(sum(every) / 45, 1) == 165.7
    val = _val(run)
    assert {s: (round(100 * r["val/pass@1"], 1), round(100 * r["val/pass@1_se"], 1))
            for s, r in val.items()} == {0: (10.0, 3.7), 15: (3.1, 1.6), 30: (11.2, 3.3),
                                         45: (14.4, 3.8)}
    manifest = json.loads((run / "manifest.json").read_text())
    assert (manifest["step"], manifest["kept"]["step"], manifest["kept"]["best"]) == (45, 0, 45)
    one_lr, anchored = _rates_by_step(run), _rates_by_step(ANCHORED)
    assert one_lr[0] == anchored[0]  # the same warm pair, seed and samples
    # step 45 leads step 0 by 1.5 SE only (kept: step 0); anchored's kept step 30 is within
    # one SE of one-lr's step 45, and anchored's step 45 leads it by 1.9 SE
    rounded = {(a, b): tuple(round(100 * x, 1) for x in _paired(x_[a], y_[b]))
               for (a, b), x_, y_ in [((45, 0), one_lr, one_lr), ((30, 45), anchored, one_lr),
                                      ((45, 45), anchored, one_lr)]}
    assert rounded == {(45, 0): (4.4, 3.0), (30, 45): (0.6, 2.6), (45, 45): (6.9, 3.6)}
    assert [round(100 * r["val/own_work"]) for r in val.values()] == [70, 72, 73, 64]
    steps = [r for r in history if r["step"] > 0]
    assert [r["step"] for r in steps if r["main/grad_norm"] > 210] == [8, 9, 15, 21, 22, 26, 36, 38, 39]
    spikes = {r["step"]: (round(r["main/grad_norm"]), round(r["main/kl"], 1)) for r in steps
              if r["main/grad_norm"] > 10_000}
    assert spikes == {21: (527496, 708.6), 38: (285360, 581.6)}
    assert round(max(r["main/kl"] for r in steps if r["step"] not in spikes), 2) == 2.19
    assert max(r["main/kl"] for r in steps if r["step"] - 1 in spikes) < 0.81
    anchored = _history(ANCHORED)
    assert max(r.get("main/kl", 0.0) for r in anchored) < 0.65


FINAL_MAGRPO_0 = REPO / "docs" / "divided-fair" / "runs" / "magrpo-seed0"


def test_the_first_final_kept_its_warm_start_as_its_record_says() -> None:
    """RECORD.md on magrpo-seed0: its validations and their pairing with step 0, the step the
    tool kept (0: the warm pair's adapters, byte for byte), its distance from the anchored
    candidate (the same recipe and seed) at each validation, the step-1 samples the two share,
    the training pass rates, main's KL spike, and the 20 samples read by hand."""
    import random

    from coopcode.training.validation import evaluations, keep

    run = FINAL_MAGRPO_0
    val = _val(run)
    assert {s: (round(100 * r["val/pass@1"], 1), round(100 * r["val/pass@1_se"], 1))
            for s, r in val.items()} == {0: (10.0, 3.7), 15: (6.9, 3.0), 30: (13.1, 3.5),
                                         45: (7.5, 3.1)}
    final, anchored = _rates_by_step(run), _rates_by_step(ANCHORED)
    assert final[0] == anchored[0]
    assert {s: tuple(round(100 * x, 1) for x in _paired(final[s], final[0])) for s in (15, 30, 45)} \
        == {15: (-3.1, 2.0), 30: (3.1, 3.4), 45: (-2.5, 2.3)}
    assert {s: tuple(round(100 * x, 1) for x in _paired(final[s], anchored[s])) for s in (15, 30, 45)} \
        == {15: (-3.8, 3.0), 30: (-1.9, 3.2), 45: (-13.8, 3.1)}
    history = _history(run)
    kept = keep(evaluations(run, history))
    assert kept is not None and (kept["step"], kept["best"]) == (0, 30)
    assert json.loads((run / "manifest.json").read_text())["kept"]["step"] == 0
    checkpoint = REPO / "checkpoints" / "compose-fair-magrpo-seed0-0.5b"
    for role in ("helper", "main"):
        assert (checkpoint / role / "adapter_model.safetensors").read_bytes() == \
            (PAIR / role / "adapter_model.safetensors").read_bytes()
    steps = [r for r in history if r["step"] > 0]
    assert round(sum(r["step_seconds"] for r in steps if r["step"] <= 31) / 31, 1) == 164.1
    assert round(max(r["step_seconds"] for r in steps)) == 1507 and max(steps, key=lambda r: r["step_seconds"])["step"] == 36

    def actions(path: Path, step: int) -> dict[tuple[str, int], str]:
        records = [json.loads(x) for x in gzip.open(path / "samples.jsonl.gz", "rt")]
        return {(r["task_id"], i): json.dumps(a, sort_keys=True) for r in records
                if r["step"] == step for i, a in enumerate(r["actions"])}

    ours, theirs = actions(run, 1), actions(ANCHORED, 1)
    assert len(ours) == 16 and sum(theirs.get(k) == v for k, v in ours.items()) == 1

    def pass_rates(rows: list[dict]) -> tuple[float, float]:
        return (round(100 * sum(r["pass_rate"] for r in rows[:15]) / 15, 1),
                round(100 * sum(r["pass_rate"] for r in rows[-15:]) / 15, 1))

    candidate = _history(ANCHORED)
    assert pass_rates(steps) == (18.8, 28.8)
    assert pass_rates([r for r in candidate if r["step"] > 0]) == (17.1, 25.8)
    spikes = [(r["step"], round(r["main/kl"], 2), round(r["main/grad_norm"])) for r in steps if r["main/kl"] > 1]
    assert spikes == [(21, 8.34, 12883)]
    assert max(r.get("main/kl", 0.0) for r in candidate) < 0.65
    samples = [json.loads(x) for x in gzip.open(run / "validation" / "step-000045" / "samples.jsonl.gz", "rt")]
    random.seed(0)
    read = random.sample(samples, 6)
    random.seed(1)
    read += random.sample(samples, 14)
    status = [s["verdict"]["status"] for s in read]
    assert (sum(bool(s.get("passed")) for s in read), sum(bool(s["cooperation"]["own_work"]) for s in read),
            status.count("timeout"), status.count("syntax_error")) == (1, 15, 2, 3)
    # Its benches: HumanEval's test split with its main alone (not in table.md), and the time
    # each bench took.
    fair = REPO / "docs" / "divided-fair"
    humaneval = [json.loads(x) for x in gzip.open(fair / "humaneval" / "magrpo-seed0" / "samples.jsonl.gz", "rt")]
    assert len(humaneval) == 400 and sum(bool(s["passed"]) for s in humaneval) == 120
    minutes = {b: round(json.loads((fair / b / "summary.json").read_text())["meta"]["wall_seconds"] / 60, 1)
               for b in ("final/magrpo-seed0", "final/magrpo-seed0-main", "humaneval/magrpo-seed0")}
    assert minutes == {"final/magrpo-seed0": 14.3, "final/magrpo-seed0-main": 6.7,
                       "humaneval/magrpo-seed0": 2.1}


def _grpo_seed0() -> Path:
    """grpo-seed0's record: carried in git while it trains (pause.sh), kept once it ends."""
    fair = REPO / "docs" / "divided-fair"
    return next(f for f in (fair / "carried" / "grpo-seed0", fair / "runs" / "grpo-seed0")
                if (f / "metrics.jsonl").exists())


def test_grpo_seed0_started_again_in_fp32_as_its_record_says() -> None:
    """RECORD.md, fifth session: grpo-seed0 began again from step 0 on an AVX2-only machine
    (the model in fp32), its validations at 0 and 15 and their pairing, its step times, and
    main's KL spike at step 11."""
    run = _grpo_seed0()
    val = _val(run)
    assert {s: (round(100 * val[s]["val/pass@1"], 1), round(100 * val[s]["val/pass@1_se"], 1))
            for s in (0, 15)} == {0: (10.6, 3.6), 15: (10.0, 3.3)}
    rates = _rates_by_step(run, (0, 15))
    assert tuple(round(100 * x, 1) for x in _paired(rates[15], rates[0])) == (-0.6, 3.0)
    for step in (0, 15):
        meta = json.loads((run / "validation" / f"step-{step:06d}" / "meta.json").read_text())
        assert meta["engine_detail"]["dtype"] == "float32"
    assert round(json.loads((run / "validation" / "step-000000" / "meta.json").read_text())
                 ["wall_seconds"]) == 389
    history = _history(run)
    steps = {r["step"]: r for r in history if r["step"] > 0}
    assert round(steps[1]["step_seconds"], 1) == 361.4
    later = [steps[s] for s in range(2, 24)]
    assert [round(sum(r[k] for r in later) / len(later), 1)
            for k in ("step_seconds", "gen_seconds", "update_seconds")] == [169.0, 50.9, 116.8]
    spikes = [(s, round(r["single/kl"], 2), round(r["single/grad_norm"]))
              for s, r in steps.items() if r["single/kl"] > 1]
    assert spikes == [(11, 3.9, 21310)]
    assert max(steps[s]["single/kl"] for s in range(12, 24)) < 0.4
    assert [round(100 * sum(steps[s]["pass_rate"] for s in span) / len(span), 1)
            for span in (range(1, 12), range(13, 24))] == [14.2, 19.3]


def test_grpo_seed0_finished_and_kept_its_warm_start_as_its_record_says() -> None:
    """RECORD.md, sixth session: grpo-seed0's validations at 0-45 and their pairing with step 0,
    the step the tool kept (0: the warm solo agent's adapter, byte for byte), the training
    pass rates and step times, and the 20 step-45 samples read by hand."""
    import random

    from coopcode.training.validation import evaluations, keep

    run = REPO / "docs" / "divided-fair" / "runs" / "grpo-seed0"
    val = _val(run)
    assert {s: (round(100 * r["val/pass@1"], 1), round(100 * r["val/pass@1_se"], 1))
            for s, r in val.items()} == {0: (10.6, 3.6), 15: (10.0, 3.3), 30: (10.0, 3.4),
                                         45: (11.9, 4.0)}
    rates = _rates_by_step(run)
    assert {s: tuple(round(100 * x, 1) for x in _paired(rates[s], rates[0])) for s in (15, 30, 45)} \
        == {15: (-0.6, 3.0), 30: (-0.6, 2.6), 45: (1.2, 3.2)}
    history = _history(run)
    kept = keep(evaluations(run, history))
    assert kept is not None and (kept["step"], kept["best"]) == (0, 45)
    assert json.loads((run / "manifest.json").read_text())["kept"]["step"] == 0
    checkpoint = REPO / "checkpoints" / "compose-fair-grpo-seed0-0.5b"
    assert (checkpoint / "main" / "adapter_model.safetensors").read_bytes() == \
        (SOLO / "main" / "adapter_model.safetensors").read_bytes()
    steps = {r["step"]: r for r in history if r["step"] > 0}
    assert round(steps[24]["step_seconds"]) == 268
    later = [steps[s] for s in range(25, 46)]
    assert [round(sum(r[k] for r in later) / len(later)) for k in
            ("step_seconds", "gen_seconds", "update_seconds")] == [193, 59, 132]
    assert [round(100 * sum(steps[s]["pass_rate"] for s in span) / len(span), 1)
            for span in (range(1, 16), range(31, 46))] == [16.7, 25.8]
    assert max(steps[s]["single/kl"] for s in range(24, 46)) < 0.14
    samples = [json.loads(x) for x in gzip.open(run / "validation" / "step-000045" / "samples.jsonl.gz", "rt")]
    random.seed(0)
    read = random.sample(samples, 20)
    status = [s["verdict"]["status"] for s in read]
    with_reference = [s["agents"]["main_with_reference"] == 1.0 for s in read]
    own_aux = [s["agents"]["helper_contract"] == 1.0 for s in read]
    assert (sum(bool(s.get("passed")) for s in read), status.count("timeout"),
            status.count("syntax_error"), sum(s["n_tokens"] >= 256 for s in read)) == (1, 2, 1, 1)
    assert (sum(with_reference), sum(own_aux), sum(a and b for a, b in zip(with_reference, own_aux))) == (6, 8, 1)
    assert all("def aux(" in s["program"] for s in read)


def test_grpo_seed0_benched_once_at_its_kept_step_as_its_record_says() -> None:
    """RECORD.md, seventh session: grpo-seed0's benches from its kept copy in checkpoints/
    (runs/ was empty), in float32; its HumanEval carry-over paired with the untrained single
    model's bench that bench_final.sh names, and magrpo-seed0's beside it; the time each took."""
    from coopcode.evaluation.compare import compare_runs, load_run

    fair = REPO / "docs" / "divided-fair"
    for bench in ("final/grpo-seed0", "humaneval/grpo-seed0"):
        meta = json.loads((fair / bench / "meta.json").read_text())
        assert meta["identity"]["main_adapter"] == "checkpoints/compose-fair-grpo-seed0-0.5b/main"
        assert meta["engine_detail"]["dtype"] == "float32"
    compose = [json.loads(x) for x in gzip.open(fair / "final" / "grpo-seed0" / "samples.jsonl.gz", "rt")]
    humaneval = [json.loads(x) for x in gzip.open(fair / "humaneval" / "grpo-seed0" / "samples.jsonl.gz", "rt")]
    assert (len(compose), sum(bool(s["passed"]) for s in compose)) == (880, 92)
    assert (len(humaneval), sum(bool(s["passed"]) for s in humaneval)) == (400, 153)
    minutes = {b: round(json.loads((fair / b / "summary.json").read_text())["meta"]["wall_seconds"] / 60, 1)
               for b in ("final/grpo-seed0", "humaneval/grpo-seed0")}
    assert minutes == {"final/grpo-seed0": 38.9, "humaneval/grpo-seed0": 8.0}
    single = load_run(str(REPO / "docs" / "coop" / "samples" / "single"))
    paired = {}
    for row in ("grpo-seed0", "magrpo-seed0"):
        d = compare_runs(single, load_run(str(fair / "humaneval" / row)), [1])["per_k"][0]
        paired[row] = (round(100 * d["a"]["mean"], 2), round(100 * d["b"]["mean"], 2),
                       round(100 * d["diff_mean"], 2), round(100 * d["diff_low"], 2), round(100 * d["diff_high"], 2))
    assert paired == {"grpo-seed0": (35.25, 38.25, 3.0, -3.57, 9.57),
                      "magrpo-seed0": (35.25, 30.0, -5.25, -12.53, 2.03)}
    table = json.loads((fair / "table.json").read_text())
    rows = {r["row"]: r for r in table["rows"]}
    assert (round(100 * rows["grpo-seed0"]["pass@1"], 2), rows["grpo-seed0"]["dtype"],
            rows["magrpo-seed0"]["dtype"]) == (10.45, "float32", "bfloat16")


def _float32_baseline(scheme: str) -> tuple[list[dict], list[dict], dict[str, dict]]:
    """An untrained baseline's committed samples (benched in float32), those that passed, and
    Table 2's rows by name."""
    fair = REPO / "docs" / "divided-fair"
    bench = fair / "baselines" / scheme
    assert json.loads((bench / "meta.json").read_text())["engine_detail"]["dtype"] == "float32"
    samples = [json.loads(x) for x in gzip.open(bench / "samples.jsonl.gz", "rt")]
    rows = {r["row"]: r for r in json.loads((fair / "table.json").read_text())["rows"]}
    return samples, [s for s in samples if s["passed"]], rows


def test_the_untrained_sequential_baseline_is_what_its_record_says() -> None:
    """RECORD.md, ninth session: the untrained `sequential` bench on compose:test, float32,
    recounted from its committed samples and the table built from them."""
    samples, passed, rows = _float32_baseline("sequential")
    assert (len(samples), len(passed)) == (880, 14)
    assert sum(bool(s["main_calls_helper"]) for s in samples) == 126  # 14.3%
    assert sum(s["cooperation"]["both_needed"] is True for s in passed) == 3  # 21.4% of 14
    assert sum(s["cooperation"]["helper_solves"] is True for s in passed) == 8
    assert (round(100 * rows["sequential"]["pass@1"], 2), round(100 * rows["single"]["pass@1"], 2)) == (1.59, 1.70)


def test_the_training_pass_rates_rise_by_problem_order_is_what_the_record_says() -> None:
    """The RECORD's table of each seed-0 run's pass rate on the problems of its first and last
    15 steps (and of the same problems met in other orders) is what the committed training
    samples give, and each run's problems are the ones seed 0's order puts at those steps."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "training_order", REPO / "docs" / "divided-fair" / "checks" / "training_order.py")
    assert spec and spec.loader
    order = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(order)
    window = order.windows()
    assert sorted(set(window.values())) == [0, 1, 2] and len(window) == 178  # one drawn twice
    for folder in order.SAME_ORDER.values():  # the order the runs trained in is seed 0's
        seen = set()
        for line in gzip.open(REPO / folder / "samples.jsonl.gz", "rt"):
            record = json.loads(line)
            assert record["step"] <= 45
            assert window.get(record["task_id"], (record["step"] - 1) // 15) == (record["step"] - 1) // 15
            seen.add(record["task_id"])
        assert seen >= window.keys()
    table = order.table()
    assert table in (REPO / "docs" / "divided-fair" / "RECORD.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in table.splitlines()[2:]}
    assert "| 18.8% | 28.0% | +9.3" in rows["magrpo-seed0 (final)"]
    assert "+2.6 [" in rows["first round, MAGRPO seed 1 (steps 1-135)"]


def test_the_untrained_contract_baseline_is_what_its_record_says() -> None:
    """RECORD.md, tenth session: the untrained `contract` bench on compose:test, float32,
    recounted from its committed samples and the table built from them."""
    samples, passed, rows = _float32_baseline("contract")
    assert (len(samples), len(passed)) == (880, 11)
    assert sum(bool(s["main_calls_helper"]) for s in samples) == 17  # 1.9%
    assert sum(s["cooperation"]["both_needed"] is True for s in passed) == 1
    assert sum(s["cooperation"]["helper_solves"] is True for s in passed) == 0
    assert sum(s["reward"]["helper_tests"] == 1.0 for s in samples) == 292
    assert sum(not s["syntax_ok"] for s in samples) == 139
    assert sum(any(o["role"] == "main" and o["finish_reason"] == "length" for o in s["outputs"])
               for s in samples) == 198
    assert round(100 * rows["contract"]["pass@1"], 2) == 1.25


def _magrpo_seed1() -> Path:
    """magrpo-seed1's record: carried in git while it trains (pause.sh), kept once it ends."""
    fair = REPO / "docs" / "divided-fair"
    return next(f for f in (fair / "carried" / "magrpo-seed1", fair / "runs" / "magrpo-seed1")
                if (f / "metrics.jsonl").exists())


def test_magrpo_seed1s_first_18_steps_are_what_its_record_says() -> None:
    """RECORD.md, eleventh and twelfth sessions: magrpo-seed1's validations at steps 0 and 15
    (recounted from their samples), the step kept after them, the step times, pass rates,
    gradient norms and KL of steps 1-18, and the trivial-main warning of step 14."""
    from coopcode.training.guards import collapse_warnings
    from coopcode.training.validation import evaluations, keep

    run = _magrpo_seed1()
    val = _val(run)
    assert {s: (round(100 * val[s]["val/pass@1"], 1), round(100 * val[s]["val/pass@1_se"], 1),
                round(100 * val[s]["val/own_work"], 1), round(100 * val[s]["val/own_work_se"], 1),
                round(val[s]["val/seconds"])) for s in (0, 15)} \
        == {0: (9.4, 3.7, 67.5, 5.2, 912), 15: (12.5, 3.6, 70.6, 5.7, 741)}
    assert [_passing(run, s)[:2] for s in (0, 15)] == [(15, 160), (20, 160)]
    history = _history(run)
    kept = keep(evaluations(run, [r for r in history if r["step"] <= 15]))
    assert kept is not None and (kept["step"], kept["best"]) == (0, 15)
    steps = {r["step"]: r for r in history if r["step"] > 0}

    def over(span: range) -> dict[str, object]:
        rows = [steps[s] for s in span]
        return {"mean": [round(sum(r[k] for r in rows) / len(rows)) for k in
                         ("step_seconds", "gen_seconds", "update_seconds")],
                "pass": [round(100 * r["pass_rate"]) for r in rows],
                "main |g|": (round(min(r["main/grad_norm"] for r in rows)),
                             round(max(r["main/grad_norm"] for r in rows))),
                "helper |g|": (round(min(r["helper/grad_norm"] for r in rows)),
                               round(max(r["helper/grad_norm"] for r in rows)))}

    assert over(range(1, 10)) == {"mean": [500, 129, 367], "pass": [25, 19, 19, 31, 19, 0, 12, 25, 31],
                                  "main |g|": (29, 96), "helper |g|": (23, 55)}
    assert over(range(10, 19)) == {"mean": [504, 134, 367], "pass": [25, 25, 31, 12, 19, 12, 12, 25, 12],
                                   "main |g|": (42, 119), "helper |g|": (32, 59)}
    assert max(max(steps[s]["main/kl"], steps[s]["helper/kl"]) for s in range(1, 10)) < 0.03
    assert round(max(steps[s]["main/kl"] for s in range(10, 19)), 2) == 0.18
    assert max(steps[s]["helper/kl"] for s in range(10, 19)) < 0.02
    # the guard: it spoke on steps 1-14 and, on steps 1-18, no longer does
    said = [w.to_dict() for w in collapse_warnings([r for r in history if r["step"] <= 14])]
    assert [w["kind"] for w in said] == ["trivial-main"]
    assert not collapse_warnings([r for r in history if r["step"] <= 18])
    shell = [round(100 * steps[s]["coop/shell"]) for s in range(1, 19)]
    assert shell[10:14] == [62, 38, 44, 75] and shell[14:18] == [19, 31, 0, 31]
    assert max(shell[:10]) == 56 and round(sum(shell[10:14]) / 4) == 55
    assert round(100 * sum(steps[s]["coop/shell"] for s in range(15, 19)) / 4) == 20
    seed0 = _history(REPO / "docs" / "divided-fair" / "runs" / "magrpo-seed0")
    s0 = [r["coop/shell"] for r in seed0 if "coop/shell" in r]
    assert len(s0) == 45 and round(100 * max(sum(s0[i:i + 4]) / 4 for i in range(42))) == 33


def _read_by_hand(first: int, last: int) -> tuple[list[tuple[str, dict]], list[dict]]:
    """magrpo-seed1's joint actions of steps first..last as (task, action), and the 20 of them
    read by hand for RECORD.md (`random.seed(0)`)."""
    import random

    samples = [json.loads(x) for x in gzip.open(_magrpo_seed1() / "samples.jsonl.gz", "rt")]
    actions = [(r["task_id"], a) for r in samples if first <= r["step"] <= last for a in r["actions"]]
    random.seed(0)
    return actions, [a for _, a in random.sample(actions, 20)]


def test_magrpo_seed1s_step_11_to_14_samples_read_by_hand_are_counted() -> None:
    """RECORD.md, twelfth session: what the joint actions behind the trivial-main warning are:
    20 of steps 11-14's 64 read by hand, and where the no-own-work mains fall by problem."""
    import ast

    actions, read = _read_by_hand(11, 14)
    assert len(actions) == 64

    def uses(a: dict) -> bool:
        return "ignored" not in a["cooperation"]["patterns"]

    def one_expression_inner(main: str) -> bool:  # `def f(..): return g(aux(..))`, g one expression
        entry = ast.parse(main).body[0]
        assert isinstance(entry, ast.FunctionDef)
        inner = {n.name: n for n in entry.body if isinstance(n, ast.FunctionDef)}
        last = entry.body[-1]
        if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Call)
                and isinstance(last.value.func, ast.Name) and last.value.func.id in inner):
            return False
        body = inner[last.value.func.id].body
        return len(body) == 1 and isinstance(body[0], ast.Return)

    shells = [a for a in read if uses(a) and not a["cooperation"]["own_work"]]
    assert (sum(map(uses, read)), len(shells), sum(bool(a["passed"]) for a in read),
            sum(bool(a["passed"]) for a in shells)) == (19, 10, 4, 2)
    assert all(one_expression_inner(a["main"]) for a in shells)
    assert sum("decorator" in a["cooperation"]["patterns"] for a in read) == 19
    by_problem: dict[str, int] = defaultdict(int)
    for task, a in actions:
        by_problem[task] += uses(a) and not a["cooperation"]["own_work"]
    counts = sorted(by_problem.values())
    assert len(counts) == 16 and counts.count(0) == 6 and min(c for c in counts if c) == 3
    assert sum(counts) == 35  # 55% of 64


def test_magrpo_seed1s_steps_19_to_43_are_what_its_record_says() -> None:
    """RECORD.md, thirteenth session: the step-30 validation (recounted from its samples, and
    paired by problem against step 0), the step kept after it, the step times and the three
    clipped spikes of main's gradient norm and KL in steps 19-43."""
    from coopcode.evaluation.stats import paired_difference
    from coopcode.training.guards import collapse_warnings
    from coopcode.training.validation import evaluations, keep

    run = _magrpo_seed1()
    val = _val(run)[30]
    assert (round(100 * val["val/pass@1"], 1), round(100 * val["val/pass@1_se"], 1),
            round(100 * val["val/own_work"], 1), round(100 * val["val/own_work_se"], 1),
            round(val["val/seconds"])) == (15.6, 4.0, 79.4, 5.4, 467)
    history = _history(run)
    kept = keep(evaluations(run, [r for r in history if r["step"] <= 43]))
    assert kept is not None and (kept["step"], kept["best"]) == (0, 30)

    def paired(step: int) -> tuple[float, ...]:  # the keep rule's comparison
        rates = [{t: sum(bool(s.get("passed")) for s in ss) / len(ss)
                  for t, ss in _passing(run, s)[2].items()} for s in (0, step)]
        assert sorted(rates[0]) == sorted(rates[1]) and len(rates[0]) == 40
        tasks = sorted(rates[0])
        d = paired_difference([rates[0][t] for t in tasks], [rates[1][t] for t in tasks])
        return (round(100 * d.difference.mean, 1), round(100 * d.difference.se, 1),
                round(100 * d.difference.low, 1), round(100 * d.difference.high, 1), d.gained,
                d.lost)

    assert paired(30) == (6.2, 3.8, -1.4, 13.9, 11, 4) and paired(15)[:4] == (3.1, 2.6, -2.1, 8.3)
    steps = {r["step"]: r for r in history if r["step"] > 0}
    rows = [steps[s] for s in range(19, 44)]
    assert [round(sum(r[k] for r in rows) / len(rows)) for k in
            ("step_seconds", "gen_seconds", "update_seconds")] == [241, 74, 165]
    assert [round(100 * r["pass_rate"]) for r in rows] == [
        12, 12, 6, 19, 6, 19, 31, 12, 12, 19, 44, 38, 12, 19, 6, 19, 19, 25, 25, 25, 12, 12, 19, 25, 25]
    spikes = {s: (round(steps[s]["main/grad_norm"]), round(steps[s]["main/kl"], 2))
              for s in range(19, 44) if steps[s]["main/grad_norm"] > 200}
    assert spikes == {28: (1524, 1.27), 40: (1782, 2.96), 43: (1206, 0.73)}
    others = [steps[s] for s in range(19, 44) if s not in spikes]
    assert (round(min(r["main/grad_norm"] for r in others)), round(max(r["main/grad_norm"] for r in others))) == (29, 172)
    assert (round(min(r["main/kl"] for r in others), 3), round(max(r["main/kl"] for r in others), 2)) == (0.004, 0.34)
    assert (round(steps[29]["main/kl"], 3), round(steps[41]["main/kl"], 2)) == (0.004, 0.04)
    assert max(r["helper/kl"] for r in rows) < 0.11
    assert (round(min(r["helper/grad_norm"] for r in rows)), round(max(r["helper/grad_norm"] for r in rows))) == (18, 82)
    # the guard: only step 14's warning, and none over steps 1-43
    assert not collapse_warnings([r for r in history if r["step"] <= 43])
    assert max(round(100 * steps[s]["coop/shell"]) for s in range(19, 44)) == 31
    # the mains with no syntax credit: 0-4 of 16 a step; step 28's three are one problem's
    samples = [json.loads(x) for x in gzip.open(run / "samples.jsonl.gz", "rt")]
    no_credit: dict[int, int] = defaultdict(int)
    for r in samples:
        if r["step"] <= 43:
            no_credit[r["step"]] += sum(a["reward"]["main_syntax"] == 0 for a in r["actions"])
    assert max(no_credit.values()) == 4 and (no_credit[28], no_credit[40], no_credit[43]) == (3, 4, 2)
    step28 = [(r["task_id"], a) for r in samples if r["step"] == 28 for a in r["actions"]
              if a["reward"]["main_syntax"] == 0]
    assert {t for t, _ in step28} == {"compose/strlen_of_decimal_to_binary"}
    assert all(a["main"].split("\n")[1][:1] not in (" ", "") for _, a in step28)  # no body


def test_magrpo_seed1s_step_19_to_43_samples_read_by_hand_are_counted() -> None:
    """RECORD.md, thirteenth session: 20 of steps 19-43's 400 joint actions read by hand: the
    same shape as steps 11-14's, the mains counted as no work of their own one-expression
    inner functions but one that calls a name it never defined."""
    actions, read = _read_by_hand(19, 43)
    assert len(actions) == 400
    uses = [a for a in read if "ignored" not in a["cooperation"]["patterns"]]
    assert len(uses) == 19 and all("decorator" in a["cooperation"]["patterns"] for a in uses)
    shells = [a for a in uses if not a["cooperation"]["own_work"]]
    assert (len(shells), sum(bool(a["passed"]) for a in read),
            sum(bool(a["passed"]) for a in shells)) == (7, 6, 4)
    one_line = [a for a in shells if len(a["main"].strip().splitlines()) == 4]  # outer, inner, two returns
    assert len(one_line) == 6
    (other,) = [a for a in shells if a not in one_line]
    assert "def minSubArraySum(" in other["main"] and "return min_sub_array_sum(aux(" in other["main"]
    assert other["reward"]["main_syntax"] == 0
