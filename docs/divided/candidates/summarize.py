"""Issue 41's candidate recipes on `compose:val`, from their committed runs: the candidates
table in BENCHMARKS.md ("Divided work").

    .venv/bin/python docs/divided/candidates/summarize.py          # the markdown table
    .venv/bin/python docs/divided/candidates/summarize.py --json

Each folder here is one candidate (MAGRPO on compose:train, validated on compose:val every
15 steps, 40 problems x 2 samples; or the warm start itself, `--algo sft`): config.json,
metrics.jsonl, samples.jsonl.gz (what the agents wrote at each step) and validation/step-N/
(each evaluation's samples, gzipped, and summary.json). Adapters are not committed (the
chosen recipe's final runs are, in checkpoints/).

Every validation figure carries its standard error over the problems, from the evaluation's
samples (`coopcode.training.validation.evaluations`); candidates are compared at their last
evaluation by the two-standard-error rule (`coopcode.evaluation.stats.choose`): one is
preferred only when it leads every other by more than two standard errors of the
difference, paired over the problems.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from coopcode.evaluation.report import pct

HERE = Path(__file__).resolve().parent
KEYS = ("val/pass@1", "val/both_needed")
THIRDS = ((1, 15), (16, 30), (31, 45))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _run_name(adapter: str) -> str:
    """The run an adapter folder belongs to (`runs/x/sft-pair/main` -> sft-pair)."""
    path = Path(adapter)
    return path.parent.name if path.name in ("helper", "main") else path.name


def _recipe(config: dict[str, Any]) -> str:
    warm = config.get("main_init") or config.get("helper_init")
    parts = [f"`{config.get('algo')}`", f"`{config.get('scheme')}`"]
    if config.get("algo") != "sft":
        parts += [f"`{config.get('reward')}`", str(config.get("joint"))]
    parts += [f"lr {config.get('learning_rate')}",
              f"warm start {_run_name(warm)}" if warm else "no warm start"]
    return ", ".join(parts)


def _constant_share(folder: Path, step: int) -> float | None:
    """The share of an evaluation's samples whose main answers every input with one literal
    (`coopcode.code_analysis.program.answers_a_constant`): the guess the tests' partial credit
    pays."""
    from coopcode.code_analysis.program import answers_a_constant
    from coopcode.evaluation.compare import read_records, samples_file
    from coopcode.training.validation import eval_dir

    try:
        records = read_records(samples_file(eval_dir(folder, step)))
    except FileNotFoundError:
        return None
    if not records:
        return None
    hits = [answers_a_constant(r.get("main_code") or "", r["entry_point"]) for r in records]
    return sum(hits) / len(hits)


def candidate(folder: Path) -> dict[str, Any]:
    """One candidate's recipe and figures."""
    from coopcode.training.validation import evaluations, per_problem

    config = json.loads((folder / "config.json").read_text())
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    evals = {e["step"]: e for e in evaluations(folder, rows)}
    steps = [r for r in rows if r["step"] > 0]
    training = {}
    for first, last in THIRDS:
        part = [r for r in steps if first <= r["step"] <= last]
        training[f"{first}-{last}"] = {key: _mean([float(r[key]) for r in part if key in r])
                                       for key in ("pass_rate", "main_calls_helper")}
    return {"name": folder.name, "recipe": _recipe(config),
            "steps": max((r["step"] for r in steps), default=0),
            "val": {step: {k: e["figures"].get(k) for k in KEYS} for step, e in sorted(evals.items())},
            "val_se": {step: {k: e["figures"].get(f"{k}_se") for k in KEYS}
                       for step, e in sorted(evals.items())},
            "val_calls": {step: (e["row"] or {}).get("main_calls_helper_rate")
                          for step, e in sorted(evals.items())},
            "val_constant": {step: _constant_share(folder, step) for step in sorted(evals)},
            "last": {k: per_problem(evals[max(evals)]["row"] or {}, k) for k in KEYS}
            if evals else {},
            "training": training}


def _pct(x: float | None) -> str:
    return pct(x, digits=1)  # one decimal, as BENCHMARKS.md's candidates table has them


def _pct_se(x: float | None, se: float | None) -> str:
    return _pct(x) if se is None or x is None else f"{_pct(x)}±{_pct(se)}"


def choices(found: list[dict[str, Any]]) -> dict[str, Any]:
    """The candidates compared at their last evaluation, per figure (`stats.choose`)."""
    from coopcode.training.validation import choose_candidates

    return choose_candidates({c["name"]: c["last"] for c in found}, KEYS)


def choice_lines(found: list[dict[str, Any]]) -> list[str]:
    from coopcode.training.validation import choice_line

    return [choice_line(key, c) for key, c in choices(found).items()]


def markdown(found: list[dict[str, Any]]) -> str:
    lines = ["| Candidate | Recipe | steps | val pass@1 by step, ±SE | val both needed (of passing), "
             "±SE | val main calls aux | val main answers a constant | training: main calls aux "
             "(steps 1-15 / 16-30 / 31-45) |",
             "|---|---|---|---|---|---|---|---|"]
    for c in found:
        val, se, steps = c["val"], c["val_se"], list(c["val"])
        by_step = " / ".join(f"{s}: {_pct_se(val[s]['val/pass@1'], se[s]['val/pass@1'])}"
                             for s in steps)
        both = " / ".join(_pct_se(val[s]["val/both_needed"], se[s]["val/both_needed"])
                          for s in steps)
        calls = " / ".join(_pct(c["val_calls"][s]) for s in steps)
        constant = " / ".join(_pct(c["val_constant"][s]) for s in steps)
        train = " / ".join(_pct(w["main_calls_helper"]) for w in c["training"].values())
        lines.append(f"| {c['name']} | {c['recipe']} | {c['steps']} | {by_step} | {both} | "
                     f"{calls} | {constant} | {train} |")
    return "\n".join([*lines, "", *choice_lines(found)]) + "\n"


def main() -> None:
    found = [candidate(f) for f in sorted(HERE.iterdir()) if (f / "metrics.jsonl").exists()]
    if "--json" in sys.argv[1:]:
        print(json.dumps({"candidates": [{k: v for k, v in c.items() if k != "last"}
                                         for c in found], "choices": choices(found)}, indent=1))
    else:
        print(markdown(found), end="")


if __name__ == "__main__":
    main()
