"""Re-score every committed bench run with the sandbox as it is now, and rebuild what is made
from them: how the committed figures were mended when the sandbox's verdicts were made
Python's (BENCHMARKS.md, "Verdicts exactly as Python gives them").

    .venv/bin/python scripts/rescore_committed.py [--dry-run]

1. Every bench folder committed under docs/ and checkpoints/ (the table's rows in
   docs/coop/samples/, the candidates' and the final runs' validation benches) is re-scored
   in place (`coopcode.evaluation.rescore.rescore_run`: same programs, new verdicts, rewards
   and cooperation; its summary.json and report.md rewritten).
2. docs/coop/summaries/ROW.json gets its rows from the re-scored samples (its meta kept);
   docs/table1/summaries/ (the seed paper's four rows) is the same files.
3. A validation bench's figures in its run's metrics.jsonl (val/pass@1, own work, helper
   solves) follow its re-scored summary; each changed record is marked `"rescored": true`.
4. The tables (docs/coop, docs/table1) are rebuilt by `coopcode paper-table --from-summaries`.
Prints every verdict that changed and every figure that moved. The training logs'
per-step samples (what the rewards were at the time) are history and are not rewritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from coopcode.evaluation.compare import summarize_folder
from coopcode.evaluation.rescore import rescore_run, rescore_summary_rows
from sandbox import open_sandbox

ROOT = Path(__file__).resolve().parent.parent
COOP = ROOT / "docs" / "coop"
TABLE1 = ROOT / "docs" / "table1"


def bench_folders() -> list[Path]:
    found = {p.parent for p in ROOT.glob("docs/**/samples.jsonl.gz") if (p.parent / "meta.json").exists()}
    found |= {p.parent for p in ROOT.glob("checkpoints/*/validation/*/samples.jsonl.gz")}
    return sorted(f for f in found if json.loads((f / "meta.json").read_text()).get("config"))


def follow_metrics(folder: Path) -> list[str]:
    """A validation bench (RUN/validation/step-N): its run's metrics record for step N."""
    if folder.parent.name != "validation" or not folder.name.startswith("step-"):
        return []
    run, step = folder.parent.parent, int(folder.name.split("-")[1])
    metrics = run / "metrics.jsonl"
    if not metrics.exists():
        return []
    (row,) = summarize_folder(folder).rows
    figures = {"val/pass@1": row["pass@1"], "val/own_work": row["own_work_rate"],
               "val/helper_solves": row["helper_solves_rate"]}
    lines, moved = metrics.read_text().splitlines(), []
    for i, line in enumerate(lines):
        record = json.loads(line)
        if record.get("step") == step and "val/pass@1" in record:
            for key, value in figures.items():
                if key in record and record[key] != value:
                    moved.append(f"{metrics.relative_to(ROOT)} step {step} {key}: "
                                 f"{record[key]} -> {value}")
                    record[key], record["rescored"] = value, True
            lines[i] = json.dumps(record)
    if moved:
        metrics.write_text("\n".join(lines) + "\n")
    return moved


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="re-score copies; change nothing")
    args = ap.parse_args()
    folders = bench_folders()
    print(f"{len(folders)} committed bench runs")
    with open_sandbox("docker") as sb:
        for folder in folders:
            target = folder
            if args.dry_run:
                target = Path("/tmp/coopcode-rescore") / folder.relative_to(ROOT)
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(folder, target)
            result = rescore_run(target, sb)
            name = folder.relative_to(ROOT)
            print(f"{name}: {result.samples} samples, {len(result.changes)} verdicts changed, "
                  f"{result.other_changes} rewards or cooperation records changed")
            for change in result.changes:
                print(f"  {change.line()}")
            for scheme, after in result.after.items():
                for key, value in after.items():
                    if result.before.get(scheme, {}).get(key) != value:
                        print(f"  {scheme} {key}: {result.before[scheme][key]} -> {value}")
            if not args.dry_run:
                for line in follow_metrics(folder):
                    print(f"  {line}")
    if args.dry_run:
        return 0
    for summary in sorted((COOP / "summaries").glob("*.json")):
        if rescore_summary_rows(summary, COOP / "samples" / summary.stem):
            print(f"{summary.relative_to(ROOT)}: rows recomputed from the re-scored samples")
        twin = TABLE1 / "summaries" / summary.name
        if twin.exists():
            shutil.copyfile(summary, twin)
    coopcode = [sys.executable, "-m", "coopcode"]
    for folder in (COOP, TABLE1):
        subprocess.run([*coopcode, "paper-table", "--from-summaries", str(folder / "summaries"),
                        "--out", str(folder)], check=True, stdout=subprocess.DEVNULL)
        print(f"{folder.relative_to(ROOT)}: table rebuilt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
