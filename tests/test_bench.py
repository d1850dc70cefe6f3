"""Bench: results store, summary and report, resume (also after SIGKILL), refused mixes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from coopcode.core.errors import UserError
from coopcode.core.events import Event, Progress, VerdictReady
from coopcode.engines import ScriptedEngine
from coopcode.evaluation.bench import BenchConfig, run_bench
from coopcode.evaluation.results import ResultsStore
from coopcode.problems import load_problems

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def good_script(prompt: str, adapter: str | None, index: int) -> str:
    """A helper/main pair that solves below_zero by cooperating (main calls aux)."""
    if prompt.endswith("def aux("):
        return "ops):\n    out, total = [], 0\n    for o in ops:\n        total += o\n        out.append(total)\n    return out\n```"
    if "below_zero" in prompt:
        return "    return any(b < 0 for b in aux(operations))\n```"
    return "    return None\n```"


def test_bench_scores_samples_and_writes_the_report(tmp_path: Path, process_sandbox: object) -> None:
    problems = load_problems(str(EXAMPLES / "below_zero.py"))
    events: list[Event] = []
    engine = ScriptedEngine(good_script)
    config = BenchConfig(problems="examples", schemes=("sequential", "single"), ks=(1, 2), n=2,
                         temperature=0.8)
    summary = run_bench(config, problems, engine, process_sandbox, tmp_path / "run", emit=events.append)
    rows = {r["scheme"]: r for r in summary.rows}
    assert rows["sequential"]["pass@1"] == 1.0 and rows["sequential"]["pass@2"] == 1.0
    assert rows["sequential"]["main_calls_helper_rate"] == 1.0
    assert rows["single"]["pass@1"] == 0.0  # single agent has no aux to call: NameError
    assert rows["single"]["acc@1"] == 0.0
    lines = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 4
    record = json.loads(lines[0])
    for key in ("task_id", "sample", "scheme", "outputs", "helper_code", "main_code", "program",
                "verdict", "reward", "n_tokens", "gen_seconds", "passed"):
        assert key in record
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    assert meta["identity"]["prompts"] and meta["versions"]["torch"] and meta["stop"]["chat"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "| Method | Pass@1 | Pass@2 | Acc@1 | Acc@2 | Problems |" in report
    assert any(isinstance(e, Progress) for e in events)
    assert sum(isinstance(e, VerdictReady) for e in events) == 4


def test_rerun_resumes_without_regenerating(tmp_path: Path, process_sandbox: object) -> None:
    problems = load_problems(str(EXAMPLES))
    config = BenchConfig(schemes=("sequential",), ks=(1,), n=2)
    first = ScriptedEngine(good_script)
    run_bench(config, problems, first, process_sandbox, tmp_path)
    assert first.calls
    again = ScriptedEngine(good_script)
    summary = run_bench(config, problems, again, process_sandbox, tmp_path)
    assert again.calls == []  # nothing regenerated
    assert summary.rows[0]["problems"] == len(problems)
    # Raising n adds samples and keeps the old ones.
    more = ScriptedEngine(good_script)
    run_bench(BenchConfig(schemes=("sequential",), ks=(1,), n=3), problems, more, process_sandbox, tmp_path)
    assert sum(len(c) for c in more.calls) == 2 * len(problems)  # helper + main, one sample each
    assert len((tmp_path / "samples.jsonl").read_text().splitlines()) == 3 * len(problems)
    meta = json.loads((tmp_path / "meta.json").read_text())
    assert (meta["sessions"], meta["timed_sessions"]) == (3, 3)  # none killed: all timed


def test_other_settings_are_refused(tmp_path: Path, process_sandbox: object) -> None:
    problems = load_problems(str(EXAMPLES / "is_palindrome.py"))
    run_bench(BenchConfig(ks=(1,), n=1), problems, ScriptedEngine(good_script), process_sandbox, tmp_path)
    with pytest.raises(UserError, match="other settings .*temperature"):
        run_bench(BenchConfig(ks=(1,), n=1, temperature=0.2), problems, ScriptedEngine(good_script),
                  process_sandbox, tmp_path)


def test_a_torn_last_line_is_dropped(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    store.add({"scheme": "s", "task_id": "t", "sample": 0, "x": 1})
    store.close()
    with open(tmp_path / "samples.jsonl", "a") as f:
        f.write('{"scheme": "s", "task_id": "t", "sam')  # killed mid-write
    store = ResultsStore(tmp_path)
    assert store.has("s", "t", 0) and not store.has("s", "t", 1)
    store.add({"scheme": "s", "task_id": "t", "sample": 1})
    store.close()
    assert [json.loads(line)["sample"] for line in (tmp_path / "samples.jsonl").read_text().splitlines()] == [0, 1]


def _bench_cmd(model: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "coopcode", "bench", "--model", str(model), "--problems",
            str(EXAMPLES), "--n", "3", "--k", "1,3", "--max-new-tokens", "24", "--dtype", "float32",
            "--sandbox", "process", "--out", str(out), "--events", "jsonl", *extra]


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]


def _keys_and_code(out: Path) -> dict[tuple, tuple]:
    return {(r["scheme"], r["task_id"], r["sample"]): (r["helper_code"], r["main_code"])
            for r in _records(out)}


def _seeds(out: Path) -> dict[tuple, list[tuple[str, int]]]:
    return {(r["scheme"], r["task_id"], r["sample"]): [(o["role"], o["seed"]) for o in r["outputs"]]
            for r in _records(out)}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory,
                  tiny_model_dir: Path) -> Callable[[bool, dict[str, str]], Path]:
    """The uninterrupted bench a killed one is compared with, run once for each setting the
    kill points share (a bench is a model load and a few seconds of sampling)."""
    done: dict[bool, Path] = {}

    def reference(deterministic: bool, env: dict[str, str]) -> Path:
        if deterministic not in done:
            out = tmp_path_factory.mktemp("reference")
            extra = ("--deterministic",) if deterministic else ()
            subprocess.run(_bench_cmd(tiny_model_dir, out, *extra), env=env, check=True,
                           capture_output=True, timeout=600)
            done[deterministic] = out
        return done[deterministic]

    return reference


@pytest.mark.slow
@pytest.mark.parametrize("kill_after_lines,deterministic", [(0, True), (4, True), (4, False)],
                         ids=["mid-generation", "after-4-samples", "after-4-samples-batched"])
def test_sigkill_at_any_point_then_rerun_gives_the_same_samples(
    tmp_path: Path, tiny_model_dir: Path, kill_after_lines: int, deterministic: bool,
    cli_env: dict[str, str], uninterrupted: Callable[[bool, dict[str, str]], Path],
) -> None:
    """Kill `coopcode bench` with SIGKILL (mid-generation, or after some samples are written),
    rerun it: the same sample keys as an uninterrupted run, none lost or doubled, each drawn
    with the seed the uninterrupted run gave it. With --deterministic (every sample generated
    alone) the texts are the uninterrupted run's too; batched, a regenerated sample may round
    differently, so only the keys and seeds are promised."""
    extra = ("--deterministic",) if deterministic else ()
    reference = uninterrupted(deterministic, cli_env)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_bench_cmd(tiny_model_dir, killed, *extra), env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 300
    samples = killed / "samples.jsonl"
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until generation is under way (or N samples are in)
        if json.loads(line)["type"] == "started" and kill_after_lines == 0:
            time.sleep(1.0)
            break
        if samples.exists() and len(samples.read_text().splitlines()) >= kill_after_lines > 0:
            break
        assert time.time() < deadline
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(samples.read_text().splitlines()) if samples.exists() else 0
    assert before < len(_keys_and_code(reference))  # it really was interrupted
    done = subprocess.run(_bench_cmd(tiny_model_dir, killed, *extra), env=cli_env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = samples.read_text().splitlines()
    assert len(lines) == len(set(lines)) == len(_keys_and_code(reference))
    assert _seeds(killed) == _seeds(reference)
    if deterministic:
        assert _keys_and_code(killed) == _keys_and_code(reference)
    else:
        assert _keys_and_code(killed).keys() == _keys_and_code(reference).keys()


@pytest.mark.slow
def test_sigkill_with_30_samples_in_flight_then_rerun(tmp_path: Path, tiny_model_dir: Path,
                                                     cli_env: dict[str, str]) -> None:
    """36 samples (3 problems x 12) all in flight at once, killed after the first is written:
    the rerun ends with the uninterrupted run's samples and summary, none lost or doubled."""
    extra = ("--n", "12", "--k", "1,12", "--concurrency", "36", "--deterministic",
             "--max-new-tokens", "12")  # the last --max-new-tokens given wins: bookkeeping, not text
    reference = tmp_path / "reference"
    subprocess.run(_bench_cmd(tiny_model_dir, reference, *extra), env=cli_env, check=True,
                   capture_output=True, timeout=600)
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_bench_cmd(tiny_model_dir, killed, *extra), env=cli_env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if json.loads(line)["type"] == "verdict":
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len((killed / "samples.jsonl").read_text().splitlines())
    assert 1 <= before <= 6  # most of the 36 were still generating
    done = subprocess.run(_bench_cmd(tiny_model_dir, killed, *extra), env=cli_env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = (killed / "samples.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) == 36
    assert _keys_and_code(killed) == _keys_and_code(reference)
    rows = [json.loads((out / "summary.json").read_text())["rows"] for out in (killed, reference)]
    assert rows[0] == rows[1]
    # The killed session added no time to wall_seconds, and meta.json says so.
    metas = [json.loads((out / "meta.json").read_text()) for out in (killed, reference)]
    assert [(m["sessions"], m["timed_sessions"]) for m in metas] == [(2, 1), (1, 1)]


def test_a_bench_does_not_resume_on_problems_whose_text_changed(tmp_path: Path,
                                                                process_sandbox: object) -> None:
    """A set rebuilt with other text (the compose prompts gained aux's examples) is another
    set: a bench begun on the old text is refused, not continued with a mix of the two."""
    import dataclasses

    problems = load_problems(str(EXAMPLES / "is_palindrome.py"))
    run_bench(BenchConfig(ks=(1,), n=1), problems, ScriptedEngine(good_script), process_sandbox,
              tmp_path)
    reworded = [dataclasses.replace(p, prompt=p.prompt + "    # reworded\n") for p in problems]
    with pytest.raises(UserError, match="other settings .*problems"):
        run_bench(BenchConfig(ks=(1,), n=2), reworded, ScriptedEngine(good_script),
                  process_sandbox, tmp_path)
    run_bench(BenchConfig(ks=(1,), n=2), problems, ScriptedEngine(good_script), process_sandbox,
              tmp_path)  # the same text resumes
