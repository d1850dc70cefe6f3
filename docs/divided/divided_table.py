"""Table 2, "divided work": the `compose` experiment's rows, every figure from committed samples.

Each row is one bench of `compose:test` (88 problems x n=10, T=0.8), kept as a folder of
its samples (`samples.jsonl.gz`) and `meta.json` under `docs/divided/` (README, "Table 2";
BENCHMARKS.md, "Divided work"). From those two files alone `build_table` gives:

- pass@1/3/5/10 with their 95% intervals (the problem is the unit, `coopcode.evaluation.stats`),
  and pass@1's interval clustered by HumanEval source: compose:test's 88 problems are built
  from 36 HumanEval problems, and those that share one are not independent
  (`stats.CLUSTERED_METHOD`);
- every trained row paired with every untrained baseline, with the GRPO row and with its own
  main agent alone, over the problems (Δ, the per-problem and the source-clustered interval,
  problems gained / lost / tied, sign test);
- what the samples are: main calls aux; the helper passes all of aux's own tests (its
  contract); main passes with the reference aux in place of the helper's; the helper's code
  alone solves the task; main copies the helper (`coopcode.code_analysis.copies`); "both
  needed" among the passing samples (the pair passes, main with stubs for the helper's
  functions fails, the helper's code alone fails: measured by running it, at bench time);
- the experiment's goal checked for each trained pair (`goal_checks`: above the untrained single
  model, the prompted contract pair and the GRPO row at pass@1, each paired source-clustered
  interval above 0, the per-problem one shown beside it, and "both needed" in at least half
  of the passing samples);
- each bench's wall time (meta.json; the sessions of a resumed bench are added up, and a
  session killed rather than stopped leaves none, so the figure is then a lower bound).

Beside it, whether what was learned carries over: each trained main agent alone on
HumanEval's test split, paired with the untrained single model there (HUMANEVAL_ROWS).

Rows whose folder is not there yet are listed as not run, so the table grows as the
experiment does (`docs/divided/table.py` writes `table.md` and `table.json`).

Its records (a row's figures, a pairing, a goal check, the table) are the frozen
dataclasses of `divided_records.py` beside it, turned into table.json's dicts only by their
`to_json`. Kept beside the experiment's data, outside the installed package (it calls
coopcode's public API only): docs/divided/table.py imports it from this folder, and
docs/divided-fair/table.py its `row_figures`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from divided_records import (  # beside this file
    AdapterStep,
    BenchTime,
    CarryOver,
    DividedRow,
    DividedTable,
    GoalCheck,
    GoalPart,
    Interval,
    Intervals,
    PairedAt,
    Pairing,
    PassAt,
    RowEntry,
    RowFigures,
    SampleProfile,
    Share,
)

from coopcode.code_analysis.copies import main_copies_helper
from coopcode.evaluation import stats
from coopcode.evaluation.report import pct
from coopcode.paper.table import estimate_cell  # the same cells as Table 1
from coopcode.schemes import has_helper

REPO = Path(__file__).resolve().parents[2]  # where the benches ran: adapter paths start here

BASELINES = ("single", "sequential", "contract", "plan")

ROWS = (
    DividedRow("single", "Single model (untrained)", "single", "baselines/single"),
    DividedRow("sequential", "Prompted pair, sequential (untrained)", "sequential",
               "baselines/sequential"),
    DividedRow("contract", "Prompted pair, contract (untrained)", "contract", "baselines/contract"),
    DividedRow("plan", "Prompted pair, plan (untrained)", "plan", "baselines/plan"),
    DividedRow("magrpo", "Contract pair trained with MAGRPO", "contract", "final/magrpo",
               trained=True),
    DividedRow("magrpo-main", "Main alone, of the MAGRPO pair", "single", "final/magrpo-main",
               trained=True, alone_of="magrpo"),
    DividedRow("magrpo-seed1", "Contract pair trained with MAGRPO, seed 1", "contract",
               "final/magrpo-seed1", trained=True),
    DividedRow("magrpo-seed1-main", "Main alone, of the MAGRPO pair, seed 1", "single",
               "final/magrpo-seed1-main", trained=True, alone_of="magrpo-seed1"),
    DividedRow("grpo", "Single agent trained with GRPO", "single", "final/grpo", trained=True),
)
ROW_KEYS = tuple(r.key for r in ROWS)

# Whether what the trained agents learned carries over: each trained main agent alone on
# HumanEval's test split (no contracts there, so `single`), paired with the untrained single
# model benched with the same settings for Table 1's cooperation section.
HUMANEVAL_ROWS = (
    DividedRow("he-single", "Single model (untrained)", "single", "../coop/samples/single"),
    DividedRow("he-magrpo", "Main of the MAGRPO pair", "single", "humaneval/magrpo", trained=True),
    DividedRow("he-magrpo-seed1", "Main of the MAGRPO pair, seed 1", "single",
               "humaneval/magrpo-seed1", trained=True),
    DividedRow("he-grpo", "Single agent trained with GRPO", "single", "humaneval/grpo",
               trained=True),
)
KS = (1, 3, 5, 10)

# The columns of what the samples are, in SampleProfile's order: (field, label).
PROFILE = (("main_calls_aux", "Main calls aux"),
           ("helper_contract", "The helper passes all of aux's own tests"),
           ("main_with_reference", "Main passes with the reference aux"),
           ("helper_solves", "The helper's code alone solves the task"),
           ("main_copies_helper", "Main re-writes the helper (no call)"),
           ("both_needed", "Both needed (of passing samples)"))


def comparisons(present: Sequence[str]) -> list[tuple[str, str]]:
    """(row, against) pairs: each trained row against every baseline and the GRPO row, and
    each trained pair against its own main alone; only rows that are present."""
    out = []
    for spec in ROWS:
        if not spec.trained or spec.key not in present:
            continue
        against = [*BASELINES, *(["grpo"] if spec.key != "grpo" else [])]
        against += [r.key for r in ROWS if r.alone_of == spec.key]
        out += [(spec.key, a) for a in against if a in present]
    return out


def sample_profile(records: Sequence[Mapping[str, Any]]) -> SampleProfile:
    """What a row's records are (counts and shares)."""
    total = len(records)
    agents = [r.get("agents") or {} for r in records]
    coop = [r.get("cooperation") or {} for r in records]
    passed = [c for r, c in zip(records, coop) if r.get("passed")]
    return SampleProfile(
        main_calls_aux=Share(sum(bool(r.get("main_calls_helper")) for r in records), total),
        helper_contract=Share(sum(a.get("helper_contract") == 1.0 for a in agents), total),
        main_with_reference=Share(sum(a.get("main_with_reference") == 1.0 for a in agents),
                                  total),
        helper_solves=Share(sum(bool(c.get("helper_solves")) for c in coop), total),
        main_copies_helper=Share(sum(map(main_copies_helper, records)), total),
        both_needed=Share(sum(c.get("both_needed") is True for c in passed), len(passed)))


def _interval(est: stats.Estimate) -> Interval | None:
    return None if est.low is None or est.high is None else (est.low, est.high)


def row_figures(folder: Path, ks: Sequence[int] = KS) -> RowFigures:
    """One row's figures from its folder's samples and meta.json (the JSON read here and
    nowhere else); each problem's HumanEval sources come from the problem set the bench
    names."""
    from coopcode.evaluation.compare import (
        problem_sources,
        read_records,
        samples_file,
        summarize_folder,
    )

    summary = summarize_folder(folder).to_dict()
    (got,) = summary["rows"]
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    per_problem = {t: {k: p[f"pass@{k}"] for k in ks} for t, p in got["per_problem"].items()}
    problems = (meta.get("config") or {}).get("problems")
    known = dict(problem_sources(problems)) if isinstance(problems, str) else {}
    sources = {t: tuple(known[t]) for t in per_problem if t in known}
    clusters = _clusters(list(per_problem), sources)
    pass_at = {}
    for k in ks:  # recomputed from the per-problem estimates
        values = [p[k] for p in per_problem.values()]
        cl = None if clusters is None else stats.clustered_mean_interval(values, clusters)
        est = stats.mean_interval(values)
        pass_at[k] = PassAt(est.mean, _interval(est), None if cl is None else _interval(cl))
    return RowFigures(
        problems=got["problems"], samples=got["samples"], n=summary["meta"].get("n"),
        time=BenchTime.from_meta(meta),
        profile=sample_profile(read_records(samples_file(folder))),
        adapter_step=adapter_step((meta.get("identity") or {}).get("main_adapter")),
        pass_at=pass_at, per_problem=per_problem, sources=sources)


def _clusters(tasks: Sequence[str], sources: Mapping[str, Sequence[str]]
              ) -> list[tuple[str, ...]] | None:
    """Each problem's clusters (its HumanEval sources), or None where no problem has any."""
    if not any(t in sources for t in tasks):
        return None
    return stats.clusters_by_source(tasks, sources)


def pair_rows(a: RowFigures, b: RowFigures, ks: Sequence[int]) -> list[PairedAt]:
    """B - A per k over the problems both rows hold (Table 1's pairing), with the
    source-clustered interval beside the per-problem one where the problems have sources."""
    pa, pb = a.per_problem, b.per_problem
    shared = sorted(set(pa) & set(pb))
    clusters = _clusters(shared, {**a.sources, **b.sources})
    out = []
    for k in ks:
        if not shared or not all(k in pa[t] and k in pb[t] for t in shared):
            continue
        paired = stats.paired_difference([pa[t][k] for t in shared],
                                         [pb[t][k] for t in shared], clusters=clusters)
        out.append(PairedAt(k, len(shared), paired))
    return out


def adapter_step(adapter: str | None) -> AdapterStep | None:
    """Where a trained run's adapters are, from the run folder the bench loaded them from
    (paths relative to the repository, as the benches ran): the step its manifest says they
    are at, the run's planned length, and the last step its metrics.jsonl records (below
    total_steps for a run stopped early). None where there is none to read (an untrained
    row, a folder not here, an SFT start)."""
    from coopcode.core.inputs import read_jsonl
    from coopcode.training.saved_runs import read_checkpoint

    if not adapter:
        return None
    folder = Path(adapter) if Path(adapter).is_absolute() else REPO / adapter
    run = folder.parent if folder.name in ("helper", "main") else folder
    info = read_checkpoint(run)
    if info.algorithm == "sft" or info.step is None or info.total_steps is None:
        return None
    metrics = run / "metrics.jsonl"
    steps = [r["step"] for _, r in read_jsonl(metrics)] if metrics.is_file() else []
    return AdapterStep(info.step, info.total_steps, max(steps, default=info.total_steps))


def _read_rows(root: Path, specs: Sequence[DividedRow], ks: Sequence[int]) -> list[RowEntry]:
    """Each row with its figures, or none where its folder is not there (not run)."""
    return [RowEntry(spec, row_figures(root / spec.folder, ks)
                     if (root / spec.folder / "meta.json").exists() else None)
            for spec in specs]


def _pairings(rows: Sequence[RowEntry], pairs: Sequence[tuple[str, str]],
              ks: Sequence[int]) -> list[Pairing]:
    by_key = {e.spec.key: e for e in rows}
    out = []
    for key, against in pairs:
        row, other = by_key[key], by_key[against]
        assert row.figures is not None and other.figures is not None  # pairs of rows run
        out.append(Pairing(key, row.spec.method, against, other.spec.method,
                           tuple(pair_rows(other.figures, row.figures, ks))))
    return out


# The experiment's goal, for each trained pair: pass@1 above each of these rows with a paired
# 95% interval excluding 0 (source-clustered: the per-problem interval treats problems that
# share a HumanEval source as independent), and "both needed" in at least half of its
# passing samples.
GOAL_AGAINST = ("single", "contract", "grpo")


def goal_checks(rows: Sequence[RowEntry], paired: Sequence[Pairing]) -> list[GoalCheck]:
    """The goal checked for each trained pair that was run, against each of GOAL_AGAINST at
    k=1 (what is met: GoalPart, GoalCheck)."""
    out = []
    for e in rows:
        if e.figures is None or not (e.spec.trained and has_helper(e.spec.scheme)):
            continue
        parts = []
        for against in GOAL_AGAINST:
            c = next((c for c in paired if c.row == e.spec.key and c.against == against), None)
            parts.append(GoalPart(against, c.against_method if c else against,
                                  c.at(1) if c else None))
        out.append(GoalCheck(e.spec.key, e.method_label, tuple(parts),
                             e.figures.profile.both_needed))
    return out


def build_table(root: Path, ks: Sequence[int] = KS) -> DividedTable:
    """The table from the row folders under `root` (rows without one: not run), and the
    HumanEval carry-over rows beside it."""
    rows = _read_rows(root, ROWS, ks)
    he_rows = _read_rows(root, HUMANEVAL_ROWS, ks)
    found = [e.spec.key for e in rows if e.figures is not None]
    he_found = {e.spec.key for e in he_rows if e.figures is not None}
    sources = {s for e in rows if e.figures is not None
               for own in e.figures.sources.values() for s in own}
    he_pairs = [(r.key, "he-single") for r in HUMANEVAL_ROWS
                if r.trained and r.key in he_found and "he-single" in he_found]
    paired = _pairings(rows, comparisons(found), ks)
    return DividedTable(
        ks=tuple(ks), rows=tuple(rows), comparisons=tuple(paired),
        goal=tuple(goal_checks(rows, paired)) if 1 in ks else (),
        humaneval=CarryOver(tuple(he_rows), tuple(_pairings(he_rows, he_pairs, ks))),
        interval=Intervals(stats.LEVEL, stats.METHOD, stats.CLUSTERED_METHOD, len(sources)))


def _percent_cell(share: Share) -> str:
    return "—" if share.rate is None else f"{100 * share.rate:.1f}%"


def _count_cell(share: Share) -> str:
    return "—" if share.rate is None else f"{share.count} / {share.of}"


def _interval_cell(ci: Sequence[float | None] | None, signed: bool = True) -> str:
    return "—" if not ci else f"[{pct(ci[0], signed)}, {pct(ci[1], signed)}]"


def _pass_rows(rows: Sequence[RowEntry], ks: Sequence[int]) -> list[str]:
    """pass@k with intervals; beside the first k's, its source-clustered interval where a
    row has one (compose's rows; HumanEval's problems have no sources)."""
    clustered = any(e.figures is not None and e.figures.clustered for e in rows)
    head = ["Method", *[f"Pass@{k} [95% CI]" for k in ks], "Problems × n", "Wall time"]
    if clustered:
        head.insert(2, f"Pass@{ks[0]} source-clustered 95% CI")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in rows:
        f = e.figures
        if f is None:
            cells = [e.spec.method, *["not run yet"] * len(ks), "—", "—"]
        else:
            cells = [e.method_label,
                     *[estimate_cell(f.pass_at[k].mean, f.pass_at[k].ci) for k in ks],
                     f"{f.problems} × {f.n or '?'}", f.time.cell]
        if clustered:
            cells.insert(2, _interval_cell(f.pass_at[ks[0]].ci_clustered if f else None,
                                           signed=False))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _paired_rows(comparisons: Sequence[Pairing]) -> list[str]:
    """Each pairing per k; the source-clustered interval beside the per-problem one where
    the problems have sources."""
    clustered = any(d.clustered is not None for c in comparisons for d in c.per_k)
    head = ["Method", "against", "k", "Δ", "95% CI",
            *(["source-clustered 95% CI"] if clustered else []), "gained / lost / tied",
            "sign test p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in comparisons:
        for d in c.per_k:
            cl, p = d.clustered, d.paired
            lines.append("| " + " | ".join([
                c.method, c.against_method, str(d.k), pct(d.diff.mean, True),
                _interval_cell([d.diff.low, d.diff.high]),
                *([_interval_cell([cl.low, cl.high] if cl else None)] if clustered else []),
                f"{p.gained} / {p.lost} / {p.tied}", f"{p.p_sign:.3g}"]) + " |")
    return lines


def _goal_rows(goal: Sequence[GoalCheck]) -> list[str]:
    """Each trained pair's goal: each comparison's Δ with its intervals, "both needed", the
    verdict."""
    lines = ["| Method | " + " | ".join(f"Δ pass@1 vs {p.against_method}"
                                       for p in goal[0].against)
             + " | Both needed | Goal |", "|" + "---|" * (len(GOAL_AGAINST) + 3)]
    for g in goal:
        cells = [("—" if p.diff is None else
                  f"{pct(p.diff, True)} {_interval_cell(p.ci)}"
                  + (f", clustered {_interval_cell(p.ci_clustered)}" if p.ci_clustered else "")
                  + f" {'met' if p.met else 'not met'}")
                 for p in g.against]
        lines.append(f"| {g.method} | " + " | ".join(cells)
                     + f" | {g.both_needed.count} / {g.both_needed.of} "
                     + f"{'met' if g.both_needed_met else 'not met'}"
                     + f" | **{'met' if g.met else 'not met'}** |")
    return lines


def render_markdown(table: DividedTable) -> str:
    """Table 2 as markdown: pass@k with intervals, the pairings, what the samples are, and
    the trained main agents alone on HumanEval's test split."""
    ks, rows, interval = table.ks, table.rows, table.interval
    lines = _pass_rows(rows, ks)
    lines += ["", f"Percentages on `compose:test`; {100 * interval.level:.0f}% "
              f"intervals: {interval.method}."]
    if interval.sources:
        lines += ["", f"Source-clustered: `compose:test`'s problems are built from "
                  f"{interval.sources} HumanEval problems, and two that share one are not "
                  f"independent; the interval that says so: {interval.clustered_method}."]
    if any(e.figures is not None and e.figures.adapter_step for e in rows):
        lines += ["", "A trained row is benched with its adapters at the step named: the "
                  "evaluation step with the highest pass@1 on `compose:val`, ties to the later "
                  "one, step 0 being the run's warm start (the rule BENCHMARKS.md, \"Divided "
                  "work\", wrote down before any bench)."]
    paired = [c for c in table.comparisons if c.per_k]
    if paired:
        lines += ["", "Each trained row paired with each baseline over the problems (Δ in "
                  "percentage points; sign test: exact, two-sided, problems gained vs lost):", "",
                  *_paired_rows(paired)]
    run = [e for e in rows if e.figures is not None]
    if run:
        lines += ["", "What the samples are (shares of all samples; both needed: of the passing "
                  "ones, the pair passes, main with stubs for the helper fails and the helper's "
                  "code alone fails):", "",
                  "| Method | " + " | ".join(label for _, label in PROFILE) + " |",
                  "|" + "---|" * (len(PROFILE) + 1)]
        for e in run:
            if has_helper(e.spec.scheme) and e.figures is not None:
                profile = e.figures.profile
                cells = [*map(_percent_cell, profile.of_samples()),
                         _count_cell(profile.both_needed)]
            else:
                cells = ["—"] * len(PROFILE)  # no helper: does not apply
            lines.append(f"| {e.spec.method} | " + " | ".join(cells) + " |")
    if table.goal:
        lines += ["", "The goal, checked for each trained pair (pass@1 above the untrained single "
                  "model, the prompted contract pair and the GRPO row, each with a paired 95% "
                  "interval above 0, clustered by HumanEval source where the problems have "
                  "sources, the per-problem interval shown first; \"both needed\" in at least "
                  "half of the passing samples):", "", *_goal_rows(table.goal)]
        met = sum(g.met for g in table.goal)
        lines += ["", f"Met by {met} of the {len(table.goal)} trained pairs benched."]
    he = table.humaneval
    if any(e.figures is not None and e.spec.trained for e in he.rows):
        lines += ["", "Carried over: each trained main agent alone (`single`) on HumanEval's test "
                  "split, with the settings of the untrained single model it is paired with "
                  "(`docs/coop/samples/single`):", "", *_pass_rows(he.rows, ks)]
        he_paired = [c for c in he.comparisons if c.per_k]
        if he_paired:
            lines += ["", *_paired_rows(he_paired)]
    return "\n".join(lines) + "\n"
