"""Table 2 again, compared fairly: every figure from the samples committed beside this file.

Each row is one bench of `compose:test` (88 problems x n=10, T=0.8), a folder of its samples
(`samples.jsonl.gz`) and `meta.json` (`docs/divided/scripts/keep.sh`):

    baselines/{single,sequential,contract,plan}/   the untrained schemes, on the set's new text
    warm/pair/  warm/solo/                         the two warm starts (contract pair, one agent)
    final/magrpo-seedS/  final/magrpo-seedS-main/  each MAGRPO final at its kept step, and its
                                                   main alone (S = 0, 1, 2)
    final/grpo-seedS/                              each GRPO final at its kept step
    runs/ROW/                                      each final's training record
                                                   (`docs/divided/scripts/keep_run.sh`)
    candidates/NAME/                               each recipe candidate's training record

From those alone `build_table` gives pass@1 and pass@10 with the per-problem and the
source-clustered interval; each seed against its own warm start and against the untrained
single model; the mean over seeds (each problem's pass@k averaged over the seeds benched) of
MAGRPO and of GRPO, each against its warm start, and MAGRPO's mean against GRPO's; and the
goal of the plan (PLAN.md) checked part by part; and the recipe, as `candidates/choose_recipe.py`
chose it on compose:val. Rows not there yet are listed as not run,
so the table grows as the experiment does.

    .venv/bin/python docs/divided-fair/table.py           # writes table.md and table.json here
    .venv/bin/python docs/divided-fair/table.py --check   # exit 1 when they are not what the samples give
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coopcode.evaluation import stats
from coopcode.evaluation.report import pct

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "divided"))  # the first round's builder, beside its data
from divided_records import Interval, RowFigures  # noqa: E402
from divided_table import row_figures  # noqa: E402

sys.path.insert(0, str(HERE))  # run_record.py, read by every script of this round
import run_record  # noqa: E402

sys.path.insert(0, str(HERE / "candidates"))  # the recipe's choice, beside the candidates
import choose_recipe  # noqa: E402

KS = (1, 10)
SEEDS = (0, 1, 2)
BASELINES = ("single", "sequential", "contract", "plan")
WARM = {"magrpo": "warm-pair", "grpo": "warm-solo"}  # each algorithm's warm start


def rows() -> list[tuple[str, str, str]]:
    """(key, folder, what it is) of every row the experiment benches, in the table's order."""
    out = [(b, f"baselines/{b}", f"untrained, `{b}`") for b in BASELINES]
    out += [("warm-pair", "warm/pair", "warm start, contract pair (SFT)"),
            ("warm-solo", "warm/solo", "warm start, one agent (SFT)")]
    for s in SEEDS:
        out += [(f"magrpo-seed{s}", f"final/magrpo-seed{s}", f"MAGRPO contract pair, seed {s}"),
                (f"magrpo-seed{s}-main", f"final/magrpo-seed{s}-main",
                 f"its main alone, seed {s}")]
    out += [(f"grpo-seed{s}", f"final/grpo-seed{s}", f"GRPO one agent, seed {s}") for s in SEEDS]
    return out


def _paired(a: Mapping[str, Any], b: Mapping[str, Any], k: int,
            sources: Mapping[str, Sequence[str]]) -> dict[str, Any] | None:
    """B - A at pass@k over the problems both hold: Δ, the per-problem and the
    source-clustered interval, problems gained / lost / tied."""
    shared = sorted(set(a) & set(b))
    if not shared:
        return None
    clusters = stats.clusters_by_source(shared, sources)
    d = stats.paired_difference([a[t] for t in shared], [b[t] for t in shared],
                                clusters=clusters)
    out = d.to_dict()
    out["problems"] = len(shared)
    return out


def _listed(ci: Interval | None) -> list[float] | None:
    return None if ci is None else list(ci)


def _mean_over(found: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each problem's estimate averaged over the seeds (the problems all of them hold)."""
    shared = set.intersection(*(set(f) for f in found))
    return {t: math.fsum(f[t] for f in found) / len(found) for t in sorted(shared)}


def kept_record(run: Path) -> dict[str, Any] | None:
    """What a final's training record says of its kept step: the step, whether it is after
    0, and whether the last evaluation is within two standard errors of it (paired over
    compose:val's problems) or the run stopped itself."""
    record = run_record.read(run)
    if record is None or record.kept is None:
        return None
    kept = record.kept
    last = max(record.evaluations) if record.evaluations else None
    held = None
    if last is not None:
        at_kept, at_last = record.per_problem(kept), record.per_problem(last)
        if at_kept is not None and at_last is not None:
            lead = stats.lead(at_kept, at_last)
            held = lead.in_se is not None and lead.in_se <= stats.PREFER_SE
    return {"kept_step": kept, "last_step": last, "steps": record.total_steps,
            "stopped_early": record.stopped_early, "last_within_2se": held,
            "val_kept": record.figure(kept),
            "val_last": record.figure(last) if last is not None else None}


def build_table(root: Path = HERE) -> dict[str, Any]:
    """The whole table as JSON: rows, pairings, means over seeds, the goal's parts."""
    figures: dict[str, RowFigures] = {}
    listed = []
    for key, folder, what in rows():
        path = root / folder
        if (path / "meta.json").exists():
            figures[key] = row_figures(path, KS)
            f = figures[key]
            meta = json.loads((path / "meta.json").read_text())
            listed.append({"row": key, "what": what, "problems": f.problems,
                           "samples": f.samples,
                           "dtype": (meta.get("engine_detail") or {}).get("dtype"),
                           **{f"pass@{k}": f.pass_at[k].mean for k in KS},
                           **{f"pass@{k}_ci": _listed(f.pass_at[k].ci) for k in KS},
                           **{f"pass@{k}_ci_clustered": _listed(f.pass_at[k].ci_clustered)
                              for k in KS}})
        else:
            listed.append({"row": key, "what": what, "not_run": True})
    sources: dict[str, Sequence[str]] = {}
    for f in figures.values():
        sources.update(f.sources)

    def pair(a: str, b: str, k: int, pa: Mapping[str, float] | None = None,
             pb: Mapping[str, float] | None = None) -> dict[str, Any] | None:
        pa = pa if pa is not None else (figures[a].by_problem(k) if a in figures else None)
        pb = pb if pb is not None else (figures[b].by_problem(k) if b in figures else None)
        if pa is None or pb is None:
            return None
        got = _paired(pa, pb, k, sources)
        return None if got is None else {"row": b, "against": a, "k": k, **got}

    seeds = []
    for algo, warm in WARM.items():
        for s in SEEDS:
            row = f"{algo}-seed{s}"
            for against in (warm, "single"):
                for k in KS:
                    if (got := pair(against, row, k)) is not None:
                        seeds.append(got)
    means: dict[str, Any] = {}
    per_mean: dict[tuple[str, int], dict[str, float]] = {}
    for algo in WARM:
        benched = [s for s in SEEDS if f"{algo}-seed{s}" in figures]
        if not benched:
            continue
        means[algo] = {"seeds": benched}
        for k in KS:
            m = _mean_over([figures[f"{algo}-seed{s}"].by_problem(k) for s in benched])
            per_mean[(algo, k)] = m
            est = stats.mean_interval(list(m.values()))
            cl = stats.clustered_mean_interval(list(m.values()),
                                               stats.clusters_by_source(sorted(m), sources))
            means[algo][f"pass@{k}"] = est.mean
            means[algo][f"pass@{k}_ci"] = [est.low, est.high]
            means[algo][f"pass@{k}_ci_clustered"] = [cl.low, cl.high]
    mean_pairs = []
    for k in KS:
        for algo, warm in WARM.items():
            if (algo, k) in per_mean and (got := pair(warm, f"{algo} (mean)", k,
                                                      pb=per_mean[(algo, k)])) is not None:
                mean_pairs.append(got)
        if ("magrpo", k) in per_mean and ("grpo", k) in per_mean:
            got = pair("grpo (mean)", "magrpo (mean)", k, pa=per_mean[("grpo", k)],
                       pb=per_mean[("magrpo", k)])
            if got is not None:
                mean_pairs.append(got)
    runs = {row: kept_record(root / "runs" / row) for row in
            [f"{a}-seed{s}" for a in WARM for s in SEEDS] if (root / "runs" / row).is_dir()}
    candidates = [choose_recipe.candidate(name, root / "candidates")
                  for name in choose_recipe.SIMPLEST]
    recipe = {"candidates": candidates, **choose_recipe.choose_recipe(candidates)}
    table = {"rows": listed, "seeds": seeds, "means": means, "mean_pairs": mean_pairs,
             "runs": runs, "recipe": recipe, "interval": {"level": stats.LEVEL, "method": stats.METHOD,
                                        "clustered_method": stats.CLUSTERED_METHOD}}
    table["goal"] = goal(table)
    return table


def _low(d: Mapping[str, Any] | None, clustered: bool = True) -> float | None:
    if d is None:
        return None
    return (d.get("clustered") or {}).get("low") if clustered else d["diff_low"]


def goal(table: Mapping[str, Any]) -> dict[str, Any]:
    """The plan's goal, part by part (None: not measured yet)."""
    def find(rows_: Sequence[Mapping[str, Any]], row: str, against: str) -> Any:
        return next((d for d in rows_ if d["row"] == row and d["against"] == against
                     and d["k"] == 1), None)

    parts: dict[str, Any] = {}
    for algo, warm in WARM.items():
        for s in SEEDS:
            row = f"{algo}-seed{s}"
            run = table["runs"].get(row)
            beats = find(table["seeds"], row, warm)
            low = _low(beats)
            parts[row] = {
                "kept_after_0": None if run is None else run["kept_step"] > 0,
                "beats_warm_start": None if low is None else low > 0,
                "beats_warm_start_low": low,
                "no_collapse_unnoticed": None if run is None else bool(
                    run["stopped_early"] or run["last_within_2se"]),
            }
    versus = find(table["mean_pairs"], "magrpo (mean)", "grpo (mean)")
    low = _low(versus)
    full = all(len(table["means"].get(a, {}).get("seeds", [])) == len(SEEDS) for a in WARM)
    parts["magrpo_mean_above_grpo_mean"] = {
        "met": None if low is None or not full else low > 0, "clustered_low": low,
        "seeds_each": {a: table["means"].get(a, {}).get("seeds", []) for a in WARM}}
    return parts


def _ci(ci: Sequence[float | None] | None, signed: bool = False) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return "—"
    fmt = "{:+.2f}" if signed else "{:.2f}"
    return f"[{fmt.format(100 * ci[0])}, {fmt.format(100 * ci[1])}]"


def _pairing_line(d: Mapping[str, Any]) -> str:
    clustered = d.get("clustered") or {}
    return (f"| {d['row']} | {d['against']} | {d['k']} | {100 * d['diff_mean']:+.2f} | "
            f"{_ci([d['diff_low'], d['diff_high']], True)} | "
            f"{_ci([clustered.get('low'), clustered.get('high')], True)} | "
            f"{d['gained']} / {d['lost']} / {d['tied']} |")


def render_markdown(table: Mapping[str, Any]) -> str:
    """The table as markdown (what table.md holds)."""
    lines = ["# Table 2 again, compared fairly", "",
             "Every figure from the samples committed beside this file "
             "(`docs/divided-fair/table.py`); compose:test, 88 problems x n=10, T=0.8. "
             f"{100 * table['interval']['level']:.0f}% intervals, per problem: "
             f"{table['interval']['method']}; clustered by HumanEval source: "
             f"{table['interval']['clustered_method']}. *Sampled in*: the model's arithmetic "
             "where the row was benched (bfloat16 on an Intel Xeon with AMX, float32 on an "
             "AVX2-only AMD EPYC, where the engine measures fp32 the faster): the same protocol "
             "and adapters, other rounding.", "",
             "| row | what | pass@1 | per problem | clustered | pass@10 | per problem | sampled in |",
             "|---|---|---|---|---|---|---|---|"]
    for r in table["rows"]:
        if r.get("not_run"):
            lines.append(f"| {r['row']} | {r['what']} | not run | | | | | |")
            continue
        lines.append(f"| {r['row']} | {r['what']} | {pct(r['pass@1'])} | "
                     f"{_ci(r['pass@1_ci'])} | {_ci(r['pass@1_ci_clustered'])} | "
                     f"{pct(r['pass@10'])} | {_ci(r['pass@10_ci'])} | {r.get('dtype') or '?'} |")
    head = ["| row | against | k | Δ (points) | per problem | clustered | gained / lost / tied |",
            "|---|---|---|---|---|---|---|"]
    if table["seeds"]:
        lines += ["", "## Each seed against its warm start and the untrained single model",
                  "", *head, *(_pairing_line(d) for d in table["seeds"])]
    if table["means"]:
        lines += ["", "## The mean over seeds", "",
                  "| algorithm | seeds | pass@1 | per problem | clustered | pass@10 |",
                  "|---|---|---|---|---|---|"]
        for algo, m in table["means"].items():
            lines.append(f"| {algo} | {', '.join(map(str, m['seeds']))} | {pct(m['pass@1'])} | "
                         f"{_ci(m['pass@1_ci'])} | {_ci(m['pass@1_ci_clustered'])} | "
                         f"{pct(m['pass@10'])} |")
        if table["mean_pairs"]:
            lines += ["", *head, *(_pairing_line(d) for d in table["mean_pairs"])]
    if table["runs"]:
        lines += ["", "## The step each final kept", "",
                  "| run | kept step | val pass@1 there | last step | val pass@1 there | "
                  "last within 2 SE | stopped itself |", "|---|---|---|---|---|---|---|"]
        for row, r in table["runs"].items():
            if r is None:
                lines.append(f"| {row} | (no kept step in its record) | | | | | |")
                continue
            lines.append(f"| {row} | {r['kept_step']} | {pct(r['val_kept'])} | "
                         f"{r['last_step']} | {pct(r['val_last'])} | {r['last_within_2se']} | "
                         f"{r['stopped_early']} |")
    recipe = table["recipe"]
    lines += ["", "## The recipe, chosen on compose:val before any final", "",
              "Each candidate's val pass@1 (40 problems x 4 samples, ± its standard error) and "
              "the step its run kept (`candidates/choose_recipe.py`, the rule in PLAN.md and "
              "its amendment in RECORD.md):", "",
              choose_recipe.markdown(recipe["candidates"], recipe)]
    lines += ["", "## The goal, part by part (— : not measured yet)", ""]
    for row, part in table["goal"].items():
        shown = ", ".join(f"{k}: {'—' if v is None else v}" for k, v in part.items()
                          if not k.endswith("_low") and k != "seeds_each")
        lines.append(f"- {row}: {shown}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when table.md or table.json is not what the samples give")
    parser.add_argument("--root", type=Path, default=HERE, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    table = build_table(args.root)
    text = render_markdown(table)
    data = json.dumps(table, indent=1, sort_keys=True, default=str) + "\n"
    md, js = args.root / "table.md", args.root / "table.json"
    if args.check:
        same = md.exists() and js.exists() and md.read_text() == text and js.read_text() == data
        print("table.md and table.json are what the samples give" if same else
              "table.md or table.json differs from what the samples give: rerun table.py")
        return 0 if same else 1
    md.write_text(text)
    js.write_text(data)
    print(f"wrote {md} and {js}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
