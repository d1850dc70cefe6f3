"""The candidate recipes' validation figures, from their committed metrics: the table in
BENCHMARKS.md ("Choosing a recipe on the validation split").

    .venv/bin/python docs/candidates/summarize.py            # the markdown table
    .venv/bin/python docs/candidates/summarize.py --json

Each folder here is one candidate run (trained on humaneval:fit, validated on humaneval:val
every 10 steps): config.json, metrics.jsonl, samples.jsonl.gz (what the agents wrote at each
step) and validation/step-N/ (each evaluation's samples, gzipped, and summary.json). The
adapters are not committed (the chosen recipe's final runs are, in checkpoints/).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WINDOWS = ((1, 10), (11, 20), (21, 30))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def candidate(folder: Path) -> dict[str, Any]:
    """One candidate's recipe and figures."""
    config = json.loads((folder / "config.json").read_text())
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    evals = {r["step"]: r for r in rows if "val/pass@1" in r}
    steps = [r for r in rows if r["step"] > 0]
    windows = {}
    for first, last in WINDOWS:
        part = [r for r in steps if first <= r["step"] <= last]
        windows[f"{first}-{last}"] = {
            key: _mean([float(r[key]) for r in part if key in r])
            for key in ("pass_rate", "main_calls_helper", "coop/own_work", "coop/helper_solves")}
    return {"name": folder.name, "reward": config.get("reward"),
            "options": {k: config[k] for k in ("agent_credit", "token_level_loss",
                                                "drop_constant_groups", "temperature", "top_p",
                                                "turns") if k in config},
            "steps": max((r["step"] for r in steps), default=0),
            "val": {step: {k.split("/", 1)[1]: r.get(k) for k in
                           ("val/pass@1", "val/own_work", "val/helper_solves")}
                    for step, r in sorted(evals.items())},
            "training": windows}


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}"


def markdown(found: list[dict[str, Any]]) -> str:
    lines = ["| Candidate | Recipe | val pass@1 by step (0 / 10 / 20 / 30) | val own work | "
             "val helper alone solves | training: main calls the helper (steps 1-10 / 21-30) |",
             "|---|---|---|---|---|---|"]
    for c in found:
        val = c["val"]
        steps = [s for s in (0, 10, 20, 30) if s in val]
        options = dict(c["options"])
        credit = options.pop("agent_credit", None) or ("counterfactual" if c["reward"] == "credit"
                                                       else "joint")
        recipe = f"`{c['reward']}`, {credit} credit " + " ".join(
            f"{k}={v}" for k, v in options.items()
            if v not in (None, False) and not (k == "temperature" and v == 0.8)
            and not (k == "top_p" and v == 0.95) and not (k == "turns" and v == 1))
        calls = c["training"]
        lines.append(
            f"| {c['name']} | {recipe.strip()} | "
            + " / ".join(_pct(val[s]["pass@1"]) for s in steps) + " | "
            + " / ".join(_pct(val[s]["own_work"]) for s in steps) + " | "
            + " / ".join(_pct(val[s]["helper_solves"]) for s in steps) + " | "
            + f"{_pct(calls['1-10']['main_calls_helper'])} / {_pct(calls['21-30']['main_calls_helper'])} |")
    return "\n".join(lines)


def main() -> None:
    found = [candidate(f) for f in sorted(HERE.iterdir()) if (f / "metrics.jsonl").exists()]
    print(json.dumps(found, indent=1) if "--json" in sys.argv else markdown(found))


if __name__ == "__main__":
    main()
