"""Re-score a finished bench run with the sandbox as it is now, without sampling again.

`coopcode evaluate RUN --rescore` runs every sample's program (and, for a pair, the helper
alone) again, writes the new verdict, reward and cooperation into each record of the run's
samples file (samples.jsonl, or samples.jsonl.gz as committed copies keep them; every other
field as it was), rewrites summary.json and report.md when the run has them, notes the
re-scoring in meta.json, and lists every sample whose verdict changed. A sample keeps the
reward it was scored with. So when the sandbox's verdicts are mended (BENCHMARKS.md,
"Verdicts exactly as Python gives them"), committed runs are judged as the sandbox judges now
without sampling them again.
"""

from __future__ import annotations

import gzip
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopcode.collaboration.judging import Judgement, Written, judge_all
from coopcode.core.errors import UserError
from coopcode.evaluation.compare import samples_file, summarize_folder
from coopcode.problems import Problem, load_problems
from coopcode.records.cooperation import NO_HELPER
from coopcode.schemes import scheme_contract
from sandbox import Sandbox


@dataclass(frozen=True)
class Change:
    """One sample whose verdict is not what the run recorded."""

    scheme: str
    task_id: str
    sample: int
    before: str  # the recorded status
    after: str
    why: str  # the new verdict's first failure, if it failed

    def line(self) -> str:
        return (f"{self.scheme} {self.task_id} sample {self.sample}: {self.before} -> {self.after}"
                + (f" ({self.why})" if self.why else ""))


@dataclass
class Rescored:
    folder: Path
    samples: int
    changes: list[Change] = field(default_factory=list)  # verdicts that changed
    other_changes: int = 0  # samples whose verdict stayed but reward or cooperation moved
    before: dict[str, dict[str, float]] = field(default_factory=dict)  # scheme -> pass@k
    after: dict[str, dict[str, float]] = field(default_factory=dict)


def judged_fields(j: Judgement) -> dict[str, Any]:
    """The fields of a bench record that its judgement decides (as `Attempt.to_dict` and
    `bench.sample_record` write them)."""
    v = j.verdict
    return {"verdict": v.to_dict(), "passed": v.passed, "pass_fraction": v.pass_fraction,
            "reward": j.reward.to_dict(), "reward_name": j.reward_name,
            "cooperation": None if j.cooperation is NO_HELPER else j.cooperation.to_record(),
            "agents": j.checks.to_record()}


def _moved(old: Any, new: Any) -> bool:
    """A recorded cooperation that the new one contradicts (fields the record lacks, such
    as `both_needed`, are additions, not changes)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return bool(old != new)
    return any(new.get(k) != v for k, v in old.items())


def _read(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _write(path: Path, records: list[dict[str, Any]]) -> None:
    """Whole or not at all: a temporary file renamed over the old one."""
    tmp = path.with_name(path.name + ".tmp")
    text = "".join(json.dumps(r, default=str) + "\n" for r in records)
    if path.suffix == ".gz":
        # mtime 0: the same records give the same bytes (committed files stay diff-stable)
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
            f.write(text.encode("utf-8"))
    else:
        tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _pass_at(folder: Path) -> dict[str, dict[str, float]]:
    return {row["scheme"]: {k: v for k, v in row.items() if k.startswith("pass@") and "_" not in k}
            for row in summarize_folder(folder).to_dict()["rows"]}


def rescore_run(folder: Path, sandbox: Sandbox, *, problems: list[Problem] | None = None) -> Rescored:
    """Re-score every sample of the bench run in `folder` (see the module docstring)."""
    path = samples_file(folder)
    if not path.exists():
        raise UserError(f"{folder}: no samples.jsonl: not a bench results folder")
    meta_path = folder / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, json.JSONDecodeError):
        raise UserError(f"{folder}: no readable meta.json: not a bench results folder") from None
    config = meta.get("config", {})
    if problems is None:
        problems = load_problems(str(config.get("problems") or "humaneval:test"))
    by_id = {p.task_id: p for p in problems}
    records = _read(path)
    missing = sorted({r["task_id"] for r in records} - by_id.keys())
    if missing:
        raise UserError(f"{folder}: samples of {missing[0]}, which is not in "
                        f"{config.get('problems')}: pass the problems with --problems")
    before = _pass_at(folder)
    written = [Written(by_id[r["task_id"]], r["scheme"], r.get("main_code", ""),
                       r.get("helper_code", ""), r.get("program", ""),
                       scheme_contract(by_id[r["task_id"]], r["scheme"], r.get("contract") or ""))
               for r in records]
    rewards = [r.get("reward_name") or None for r in records]
    timeout = float(config.get("timeout") or 5.0)
    for reward in dict.fromkeys(rewards):  # one batch of sandbox jobs per reward
        idx = [i for i, r in enumerate(rewards) if r == reward]
        for i, j in zip(idx, judge_all([written[i] for i in idx], sandbox, reward, timeout)):
            records[i]["_new"] = judged_fields(j)
    result = Rescored(folder, len(records))
    for r in records:
        new = r.pop("_new")
        old_status = (r.get("verdict") or {}).get("status", "")
        if old_status != new["verdict"]["status"] or bool(r.get("passed")) != new["passed"]:
            failing = next((t for t in new["verdict"]["tests"] if t["status"] != "passed"), None)
            why = new["verdict"].get("detail") or (
                f"{failing['error_type'] or failing['status']}: {failing['message']}" if failing else "")
            result.changes.append(Change(r["scheme"], r["task_id"], int(r["sample"]), old_status,
                                         new["verdict"]["status"], str(why)[:160]))
        elif r.get("reward") != new["reward"] or _moved(r.get("cooperation"), new["cooperation"]):
            result.other_changes += 1
        r.update(new)
    _write(path, records)
    result.before, result.after = before, _pass_at(folder)
    _rewrite_summary(folder, meta)
    meta.setdefault("rescored", []).append({
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sandbox": getattr(sandbox, "name", ""), "changed_verdicts": len(result.changes),
        "other_changes": result.other_changes})
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return result


def _rewrite_summary(folder: Path, meta: dict[str, Any]) -> None:
    """summary.json's rows (and report.md) from the re-scored samples; its meta as it was."""
    from coopcode.evaluation.report import write_report

    summary_path = folder / "summary.json"
    if not summary_path.exists():
        return
    old = json.loads(summary_path.read_text())
    summary = summarize_folder(folder)
    summary.meta = old.get("meta", summary.meta)
    if (folder / "report.md").exists():
        write_report(folder, summary, meta)
    else:
        summary_path.write_text(json.dumps(summary.to_dict(), indent=2, default=str))


def rescore_summary_rows(summary_path: Path, folder: Path) -> bool:
    """A summary kept apart from its samples (docs/coop/summaries/ROW.json beside
    docs/coop/samples/ROW/): its rows recomputed from the samples, everything else kept.
    True when a figure changed."""
    old = json.loads(summary_path.read_text())
    rows = summarize_folder(folder).to_dict()["rows"]
    if rows == old["rows"]:
        return False
    old["rows"] = rows
    summary_path.write_text(json.dumps(old, indent=2, default=str) + "\n")
    return True
