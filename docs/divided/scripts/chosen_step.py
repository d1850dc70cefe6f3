"""Which evaluation step of a final run is benched (issue 41's rule, written before any
bench): the step with the highest val pass@1, ties going to the later step; step 0 is the
warm start itself. Prints the step and the adapters to bench (a run folder holding main/, and
helper/ for a pair).

    .venv/bin/python docs/divided/scripts/chosen_step.py runs/divided/final-runs/ROW
    .venv/bin/python docs/divided/scripts/chosen_step.py --choosable RUN  # still in the running
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _scores(run: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    scores = {int(r["step"]): float(r["val/pass@1"]) for r in rows if "val/pass@1" in r}
    if not scores:
        raise SystemExit(f"chosen_step: {run} has no evaluation")
    return scores


def chosen_step(run: Path) -> int:
    """The evaluation step the rule picks from the run's metrics.jsonl."""
    scores = _scores(run)
    return max(scores, key=lambda step: (scores[step], step))


def choosable_steps(run: Path) -> list[int]:
    """The evaluation steps of an unfinished run that the rule could still pick, whatever the
    evaluations still to come measure: no earlier step scored higher, no later step as high.
    Only their adapters need keeping (carry_run.sh)."""
    scores = _scores(run)
    return [s for s, v in sorted(scores.items())
            if not any(t < s and w > v or t > s and w >= v for t, w in scores.items())]


def adapters_of(run: Path, step: int) -> str:
    """The folder holding the adapters that step's evaluation measured."""
    if step == 0:  # before any update: the warm start the run began from
        config: dict[str, Any] = json.loads((run / "config.json").read_text())
        warm = config.get("main_init") or config.get("helper_init")
        if not warm:
            raise SystemExit(f"chosen_step: {run} started from the base model (no adapters)")
        return str(Path(warm).parent if Path(warm).name in ("main", "helper") else Path(warm))
    kept = run / "validation" / f"step-{step:06d}" / "adapters"
    if (kept / "main").is_dir():
        return str(kept)
    manifest = run / "manifest.json"
    if manifest.is_file() and (run / "main").is_dir() \
            and json.loads(manifest.read_text()).get("step") == step:
        return str(run)  # the run's last step: its own adapters
    raise SystemExit(f"chosen_step: {kept} was not kept (the run lacked --keep-eval-adapters)")


if __name__ == "__main__":
    if sys.argv[1] == "--choosable":
        print(" ".join(str(s) for s in choosable_steps(Path(sys.argv[2]))))
        raise SystemExit(0)
    folder = Path(sys.argv[1])
    step = chosen_step(folder)
    print(step, adapters_of(folder, step))
