"""The fair round's recipe, chosen on compose:val by the rule PLAN.md fixed before any run,
from the candidates' committed records (each folder here: config, metrics, manifest, step
samples and every validation's samples, kept by docs/divided/scripts/keep_run.sh).

    .venv/bin/python docs/divided-fair/candidates/choose_recipe.py            # the table and the choice
    .venv/bin/python docs/divided-fair/candidates/choose_recipe.py --json
    .venv/bin/python docs/divided-fair/candidates/choose_recipe.py --name     # the chosen name alone

The rule: each candidate is its kept step (`manifest.json` `kept.step`, the step the run
itself kept); the one with the highest val pass@1 is chosen where it leads every other by more
than two standard errors, paired over compose:val's problems (`stats.choose`); with no such
lead, the simplest of the best and those it does not lead that far, simplest first in
SIMPLEST (fewest options). No choice is made until every candidate has finished. A candidate
whose run kept step 0 (its warm start: training found nothing better) is not a recipe and is
left out of the comparison (an amendment made before the last candidate finished, RECORD.md
2026-12-06); what the rule gives with it left in is printed beside.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # run_record.py, beside the round's data
import run_record  # noqa: E402

# fewest options first: no-kl leaves out the anchor, one-lr the second rate
SIMPLEST = ("no-kl", "one-lr", "anchored")


def candidate(name: str, root: Path = HERE) -> dict[str, Any]:
    """One candidate's curve, its kept step, and that step's per-problem val pass@1;
    `finished` False (and nothing kept) while its record is missing or its run unfinished."""
    record = run_record.read(root / name)
    if record is None:
        return {"name": name, "finished": False, "step": 0, "total_steps": None, "curve": []}
    curve = [{"step": step, "pass@1": record.figure(step), "se": record.figure(step, "val/pass@1_se")}
             for step in sorted(record.evaluations)]
    out = {"name": name, "finished": record.finished, "step": record.step,
           "total_steps": record.total_steps, "curve": curve}
    if record.finished and record.kept is not None:
        out["kept"] = record.kept
        out["per_problem"] = record.per_problem(record.kept)
    return out


def _by_rule(candidates: list[dict[str, Any]]) -> tuple[str | None, str, dict | None]:
    """PLAN.md's rule over finished candidates: (chosen, why, the two-SE comparison)."""
    from coopcode.evaluation.stats import choose

    if len(candidates) == 1:
        return candidates[0]["name"], "the only one", None
    choice = choose({c["name"]: c["per_problem"] for c in candidates})
    if choice.preferred:
        return (choice.preferred, f"{choice.preferred} leads every other by more than two "
                "standard errors", choice.to_dict())
    within = sorted([choice.best, *choice.tied], key=SIMPLEST.index)
    return (within[0], f"{choice.best} leads, but not {', '.join(choice.tied)} by two "
            f"standard errors: the simplest of {', '.join(within)}", choice.to_dict())


def choose_recipe(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule above over finished candidates: `{chosen, why, choice, as_written}`; chosen
    None while any is unfinished or when none kept a step after its start. `as_written` is
    what the rule gives with the candidates that kept their start left in (RECORD.md,
    2026-12-06: the amendment and why)."""
    waiting = [c["name"] for c in candidates if not c["finished"]]
    if waiting:
        return {"chosen": None, "why": f"waiting for {', '.join(waiting)}", "choice": None,
                "as_written": None}
    as_written = _by_rule(candidates)[0]
    trained = [c for c in candidates if c["kept"] > 0]
    if not trained:
        return {"chosen": None, "why": "no candidate kept a step after its start",
                "choice": None, "as_written": as_written}
    chosen, why, choice = _by_rule(trained)
    left = [c["name"] for c in candidates if c["kept"] == 0]
    if left:
        why += f"; {', '.join(left)} kept {'its' if len(left) == 1 else 'their'} start"
    return {"chosen": chosen, "why": why, "choice": choice, "as_written": as_written}


def markdown(candidates: list[dict[str, Any]], result: dict[str, Any]) -> str:
    def cell(point: dict[str, Any]) -> str:
        if point["pass@1"] is None:
            return ""
        se = f" ±{100 * point['se']:.1f}" if point["se"] is not None else ""
        return f"{100 * point['pass@1']:.1f}%{se}"

    steps = sorted({p["step"] for c in candidates for p in c["curve"]})
    lines = ["| candidate | " + " | ".join(f"step {s}" for s in steps) + " | kept |",
             "|---|" + "---|" * (len(steps) + 1)]
    for c in candidates:
        by_step = {p["step"]: cell(p) for p in c["curve"]}
        kept = (f"step {c['kept']}" if c["finished"] else "no record yet" if not c["total_steps"]
                else f"not finished ({c['step']} of {c['total_steps']} steps)")
        lines.append(f"| {c['name']} | " + " | ".join(by_step.get(s, "") for s in steps)
                     + f" | {kept} |")
    lines.append("")
    lines.append(f"Chosen: **{result['chosen']}** ({result['why']})." if result["chosen"]
                 else f"Not chosen: {result['why']}.")
    if result["as_written"] and result["as_written"] != result["chosen"]:
        lines.append(f"With the candidates that kept their start left in, the rule as first "
                     f"written gives {result['as_written']}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="everything, as JSON")
    parser.add_argument("--name", action="store_true",
                        help="the chosen candidate's name alone (exit 1 while not chosen)")
    parser.add_argument("--root", type=Path, default=HERE,
                        help="where the candidates' folders are (default: the committed records)")
    args = parser.parse_args(argv)
    candidates = [candidate(name, args.root) for name in SIMPLEST]
    result = choose_recipe(candidates)
    if args.name:
        if not result["chosen"]:
            print(f"choose_recipe.py: {result['why']}", file=sys.stderr)
            return 1
        print(result["chosen"])
    elif args.json:
        print(json.dumps({"candidates": candidates, **result}, indent=1))
    else:
        print(markdown(candidates, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
