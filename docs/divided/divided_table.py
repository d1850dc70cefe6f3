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
  alone solves the task; main copies the helper (`coopcode.written.copies`); "both needed"
  among the passing samples (the pair passes, main with stubs for the helper's functions
  fails, the helper's code alone fails: measured by running it, at bench time);
- issue 41's goal checked for each trained pair (`goal_checks`: above the untrained single
  model, the prompted contract pair and the GRPO row at pass@1, each paired source-clustered
  interval above 0, the per-problem one shown beside it, and "both needed" in at least half
  of the passing samples);
- each bench's wall time (meta.json; the sessions of a resumed bench are added up, and a
  session killed rather than stopped leaves none, so the figure is then a lower bound).

Beside it, whether what was learned carries over: each trained main agent alone on
HumanEval's test split, paired with the untrained single model there (HUMANEVAL_ROWS).

Rows whose folder is not there yet are listed as not run, so the table grows as the
experiment does (`docs/divided/table.py` writes `table.md` and `table.json`).

Kept beside the experiment's data, outside the installed package (it calls coopcode's
public API only): docs/divided/table.py imports it from this folder, and
docs/divided-fair/table.py its `row_figures`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coopcode.code_analysis.copies import main_copies_helper
from coopcode.evaluation import stats
from coopcode.evaluation.report import pct
from coopcode.paper.table import pass_cell  # the same cells as Table 1
from coopcode.schemes import has_helper

REPO = Path(__file__).resolve().parents[2]  # where the benches ran: adapter paths start here


@dataclass(frozen=True)
class DividedRow:
    key: str
    method: str
    scheme: str
    folder: str  # relative to the table's root (docs/divided)
    trained: bool = False
    alone_of: str | None = None  # the trained pair whose main agent this row benches alone


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

# What the samples are: (key, label); shares of samples, "both needed" of the passing ones.
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


def _share(hits: int, total: int) -> dict[str, Any]:
    return {"count": hits, "of": total, "rate": hits / total if total else None}


def sample_profile(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """PROFILE's figures from a row's records (counts and shares)."""
    total = len(records)
    agents = [r.get("agents") or {} for r in records]
    coop = [r.get("cooperation") or {} for r in records]
    passed = [c for r, c in zip(records, coop) if r.get("passed")]
    return {
        "main_calls_aux": _share(sum(bool(r.get("main_calls_helper")) for r in records), total),
        "helper_contract": _share(sum(a.get("helper_contract") == 1.0 for a in agents), total),
        "main_with_reference": _share(sum(a.get("main_with_reference") == 1.0 for a in agents),
                                      total),
        "helper_solves": _share(sum(bool(c.get("helper_solves")) for c in coop), total),
        "main_copies_helper": _share(sum(map(main_copies_helper, records)), total),
        "both_needed": _share(sum(c.get("both_needed") is True for c in passed), len(passed)),
    }


def row_figures(folder: Path, ks: Sequence[int] = KS) -> dict[str, Any]:
    """One row's figures from its folder's samples and meta.json; `sources` (each problem's
    HumanEval sources, from the problem set the bench names) is for the pairings, not the
    table."""
    from coopcode.evaluation.compare import (
        problem_sources,
        read_records,
        samples_file,
        summarize_folder,
    )

    summary = summarize_folder(folder).to_dict()
    (got,) = summary["rows"]
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    per_problem = got["per_problem"]
    problems = (meta.get("config") or {}).get("problems")
    sources = dict(problem_sources(problems)) if isinstance(problems, str) else {}
    figures: dict[str, Any] = {"problems": got["problems"], "samples": got["samples"],
                               "n": summary["meta"].get("n"),
                               "wall_seconds": meta.get("wall_seconds"),
                               "sessions": meta.get("sessions"),
                               "timed_sessions": meta.get("timed_sessions"),
                               "per_problem": {t: {f"pass@{k}": p[f"pass@{k}"] for k in ks}
                                               for t, p in per_problem.items()},
                               "profile": sample_profile(read_records(samples_file(folder))),
                               "adapter_step": adapter_step(
                                   (meta.get("identity") or {}).get("main_adapter")),
                               "sources": {t: sources[t] for t in per_problem if t in sources}}
    clusters = _clusters(list(per_problem), figures["sources"])
    for k in ks:  # recomputed from the per-problem estimates
        values = [p[f"pass@{k}"] for p in per_problem.values()]
        est = stats.mean_interval(values)
        figures[f"pass@{k}"] = est.mean
        figures[f"pass@{k}_ci"] = None if est.low is None else [est.low, est.high]
        if clusters is not None:
            cl = stats.clustered_mean_interval(values, clusters)
            figures[f"pass@{k}_ci_clustered"] = None if cl.low is None else [cl.low, cl.high]
    return figures


def _clusters(tasks: Sequence[str], sources: Mapping[str, Sequence[str]]
              ) -> list[tuple[str, ...]] | None:
    """Each problem's clusters (its HumanEval sources), or None where no problem has any."""
    if not any(t in sources for t in tasks):
        return None
    return stats.clusters_by_source(tasks, sources)


def _paired(a: Mapping[str, Any], b: Mapping[str, Any], ks: Sequence[int]) -> list[dict[str, Any]]:
    """B - A per k over the problems both rows hold (Table 1's pairing), with the
    source-clustered interval beside the per-problem one where the problems have sources."""
    pa, pb = a.get("per_problem") or {}, b.get("per_problem") or {}
    shared = sorted(set(pa) & set(pb))
    clusters = _clusters(shared, {**(a.get("sources") or {}), **(b.get("sources") or {})})
    out = []
    for k in ks:
        key = f"pass@{k}"
        if not shared or not all(key in pa[t] and key in pb[t] for t in shared):
            continue
        paired = stats.paired_difference([pa[t][key] for t in shared],
                                         [pb[t][key] for t in shared], clusters=clusters)
        out.append({"k": k, "problems": len(shared), **paired.to_dict()})
    return out


def adapter_step(adapter: str | None) -> list[int] | None:
    """[step, total_steps, trained_to] of a trained run's adapters, from the run folder the
    bench loaded them from (paths relative to the repository, as the benches ran): the step
    its manifest says they are at, the run's planned length, and the last step its
    metrics.jsonl records (below total_steps for a run stopped early). None where there is
    none to read (an untrained row, a folder not here, an SFT start)."""
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
    return [info.step, info.total_steps, max(steps, default=info.total_steps)]


def _step_label(step: Sequence[int]) -> str:
    """' (step 0 of 135)', or ' (step 0; stopped at 45 of 135)' for a run stopped early."""
    at, total = step[0], step[1]
    trained = step[2] if len(step) > 2 else total  # a table.json written before the third
    if trained < total:
        return f" (step {at}; stopped at {trained} of {total})"
    return f" (step {at} of {total})"


def _method_label(entry: Mapping[str, Any]) -> str:
    """A row's method, with the step its adapters are at where it has one."""
    step = entry.get("adapter_step")
    return entry["method"] + (_step_label(step) if step else "")


def _read_rows(root: Path, specs: Sequence[DividedRow], ks: Sequence[int]
               ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Each row's entry (not run where its folder is not there) and the figures of those run."""
    rows, found = [], {}
    for spec in specs:
        folder = root / spec.folder
        entry: dict[str, Any] = {"row": spec.key, "method": spec.method, "scheme": spec.scheme,
                                 "folder": spec.folder, "trained": spec.trained}
        if not (folder / "meta.json").exists():
            rows.append({**entry, "run": False})
            continue
        found[spec.key] = row_figures(folder, ks)
        rows.append({**entry, "run": True,
                     **{k: v for k, v in found[spec.key].items()
                        if k not in ("per_problem", "sources")}})
    return rows, found


def _pairings(specs: Sequence[DividedRow], found: Mapping[str, Any],
              pairs: Sequence[tuple[str, str]], ks: Sequence[int]) -> list[dict[str, Any]]:
    method = {r.key: r.method for r in specs}
    return [{"row": key, "method": method[key], "against": against,
             "against_method": method[against], "per_k": _paired(found[against], found[key], ks)}
            for key, against in pairs]


# Issue 41's goal, for each trained pair: pass@1 above each of these rows with a paired 95%
# interval excluding 0 (source-clustered, issue 53: the per-problem interval treats problems
# that share a HumanEval source as independent), and "both needed" in at least half of its
# passing samples.
GOAL_AGAINST = ("single", "contract", "grpo")


def goal_checks(rows: Sequence[Mapping[str, Any]], paired: Sequence[Mapping[str, Any]]
                ) -> list[dict[str, Any]]:
    """The goal checked for each trained pair that was run: each comparison at k=1 (met when
    its source-clustered interval's low end is above 0, or the per-problem one's where the
    problems have no sources; `met_per_problem` says what the per-problem interval alone
    would), "both needed" (met at half or more of the passing samples), and the row's
    verdict (met only when every part is there and met)."""
    out = []
    for e in rows:
        if not (e["run"] and e["trained"] and has_helper(e["scheme"])):
            continue
        parts = []
        for against in GOAL_AGAINST:
            c = next((c for c in paired if c["row"] == e["row"] and c["against"] == against), None)
            d = next((d for d in c["per_k"] if d["k"] == 1), None) if c else None
            cl = d.get("clustered") if d else None
            above = bool(d and d["diff_low"] is not None and d["diff_low"] > 0)
            parts.append({"against": against, "against_method": c["against_method"] if c else against,
                          "diff": d["diff_mean"] if d else None,
                          "ci": [d["diff_low"], d["diff_high"]] if d else None,
                          "ci_clustered": [cl["low"], cl["high"]] if cl else None,
                          "met_per_problem": above,
                          "met": (cl["low"] is not None and cl["low"] > 0) if cl else above})
        both = e["profile"]["both_needed"]
        both_met = bool(both["of"]) and 2 * both["count"] >= both["of"]
        out.append({"row": e["row"], "method": _method_label(e), "against": parts,
                    "both_needed": [both["count"], both["of"]], "both_needed_met": both_met,
                    "met": both_met and all(p["met"] for p in parts)})
    return out


def build_table(root: Path, ks: Sequence[int] = KS) -> dict[str, Any]:
    """The table from the row folders under `root` (rows without one: not run), and the
    HumanEval carry-over rows beside it."""
    rows, found = _read_rows(root, ROWS, ks)
    he_rows, he_found = _read_rows(root, HUMANEVAL_ROWS, ks)
    sources = {s for f in found.values() for own in f["sources"].values() for s in own}
    he_pairs = [(r.key, "he-single") for r in HUMANEVAL_ROWS
                if r.trained and r.key in he_found and "he-single" in he_found]
    paired = _pairings(ROWS, found, comparisons(list(found)), ks)
    return {"ks": list(ks), "rows": rows, "comparisons": paired,
            "goal": goal_checks(rows, paired) if 1 in ks else [],
            "humaneval": {"rows": he_rows,
                          "comparisons": _pairings(HUMANEVAL_ROWS, he_found, he_pairs, ks)},
            "interval": {"level": stats.LEVEL, "method": stats.METHOD,
                         "clustered_method": stats.CLUSTERED_METHOD, "sources": len(sources)}}


def _profile_cell(share: Mapping[str, Any], key: str) -> str:
    if share["rate"] is None:
        return "—"
    if key == "both_needed":
        return f"{share['count']} / {share['of']}"
    return f"{100 * share['rate']:.1f}%"


def _wall(entry: Mapping[str, Any]) -> str:
    """The bench's wall time; a bench resumed over several sessions says so. A session that
    was killed, not stopped, left no time to add: where meta.json counts the timed sessions
    and one is missing, the figure is a lower bound (≥)."""
    wall, sessions = entry.get("wall_seconds"), entry.get("sessions")
    if not isinstance(wall, int | float):
        return "—"
    timed = entry.get("timed_sessions")
    low = "≥ " if isinstance(timed, int) and isinstance(sessions, int) and timed < sessions else ""
    many = f" ({sessions} sessions)" if (sessions or 1) > 1 else ""
    return f"{low}{wall / 60:.0f} min{many}"


def _interval(ci: Sequence[float | None] | None, signed: bool = True) -> str:
    return "—" if not ci else f"[{pct(ci[0], signed)}, {pct(ci[1], signed)}]"


def _pass_rows(rows: Sequence[Mapping[str, Any]], ks: Sequence[int]) -> list[str]:
    """pass@k with intervals; beside the first k's, its source-clustered interval where a
    row has one (compose's rows; HumanEval's problems have no sources)."""
    first = f"pass@{ks[0]}_ci_clustered"
    clustered = any(first in e for e in rows)
    head = ["Method", *[f"Pass@{k} [95% CI]" for k in ks], "Problems × n", "Wall time"]
    if clustered:
        head.insert(2, f"Pass@{ks[0]} source-clustered 95% CI")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in rows:
        if not e["run"]:
            cells = [e["method"], *["not run yet"] * len(ks), "—", "—"]
        else:
            cells = [_method_label(e), *[pass_cell(e, k) for k in ks],
                     f"{e['problems']} × {e.get('n') or '?'}", _wall(e)]
        if clustered:
            cells.insert(2, _interval(e.get(first), signed=False))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _paired_rows(comparisons: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each pairing per k; the source-clustered interval beside the per-problem one where
    the problems have sources."""
    clustered = any("clustered" in d for c in comparisons for d in c["per_k"])
    head = ["Method", "against", "k", "Δ", "95% CI",
            *(["source-clustered 95% CI"] if clustered else []), "gained / lost / tied",
            "sign test p"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in comparisons:
        for d in c["per_k"]:
            cl = d.get("clustered")
            lines.append("| " + " | ".join([
                c["method"], c["against_method"], str(d["k"]), pct(d["diff_mean"], True),
                _interval([d["diff_low"], d["diff_high"]]),
                *([_interval([cl["low"], cl["high"]] if cl else None)] if clustered else []),
                f"{d['gained']} / {d['lost']} / {d['tied']}", f"{d['p_sign']:.3g}"]) + " |")
    return lines


def render_markdown(table: Mapping[str, Any]) -> str:
    """Table 2 as markdown: pass@k with intervals, the pairings, what the samples are, and
    the trained main agents alone on HumanEval's test split."""
    ks, rows = table["ks"], table["rows"]
    lines = _pass_rows(rows, ks)
    interval = table["interval"]
    lines += ["", f"Percentages on `compose:test`; {100 * interval['level']:.0f}% "
              f"intervals: {interval['method']}."]
    if interval.get("sources"):
        lines += ["", f"Source-clustered: `compose:test`'s problems are built from "
                  f"{interval['sources']} HumanEval problems, and two that share one are not "
                  f"independent; the interval that says so: {interval['clustered_method']}."]
    if any(e.get("adapter_step") for e in rows):
        lines += ["", "A trained row is benched with its adapters at the step named: the "
                  "evaluation step with the highest pass@1 on `compose:val`, ties to the later "
                  "one, step 0 being the run's warm start (the rule BENCHMARKS.md, \"Divided "
                  "work\", wrote down before any bench)."]
    paired = [c for c in table["comparisons"] if c["per_k"]]
    if paired:
        lines += ["", "Each trained row paired with each baseline over the problems (Δ in "
                  "percentage points; sign test: exact, two-sided, problems gained vs lost):", "",
                  *_paired_rows(paired)]
    run = [e for e in rows if e["run"]]
    if run:
        lines += ["", "What the samples are (shares of all samples; both needed: of the passing "
                  "ones, the pair passes, main with stubs for the helper fails and the helper's "
                  "code alone fails):", "",
                  "| Method | " + " | ".join(label for _, label in PROFILE) + " |",
                  "|" + "---|" * (len(PROFILE) + 1)]
        for e in run:
            if has_helper(e["scheme"]):
                cells = [_profile_cell(e["profile"][key], key) for key, _ in PROFILE]
            else:
                cells = ["—"] * len(PROFILE)  # no helper: does not apply
            lines.append(f"| {e['method']} | " + " | ".join(cells) + " |")
    goal = table.get("goal") or []
    if goal:
        lines += ["", "The goal, checked for each trained pair (pass@1 above the untrained single "
                  "model, the prompted contract pair and the GRPO row, each with a paired 95% "
                  "interval above 0, clustered by HumanEval source where the problems have "
                  "sources, the per-problem interval shown first; \"both needed\" in at least "
                  "half of the passing samples):",
                  "", "| Method | " + " | ".join(f"Δ pass@1 vs {p['against_method']}"
                                         for p in goal[0]["against"])
                  + " | Both needed | Goal |", "|" + "---|" * (len(GOAL_AGAINST) + 3)]
        for g in goal:
            cells = [("—" if p["diff"] is None else
                      f"{pct(p['diff'], True)} {_interval(p['ci'])}"
                      + (f", clustered {_interval(p['ci_clustered'])}"
                         if p.get("ci_clustered") else "")
                      + f" {'met' if p['met'] else 'not met'}")
                     for p in g["against"]]
            count, of = g["both_needed"]
            lines.append(f"| {g['method']} | " + " | ".join(cells)
                         + f" | {count} / {of} {'met' if g['both_needed_met'] else 'not met'}"
                         + f" | **{'met' if g['met'] else 'not met'}** |")
        met = sum(g["met"] for g in goal)
        lines += ["", f"Met by {met} of the {len(goal)} trained pairs benched."]
    he = table.get("humaneval")
    if he and any(e["run"] and e["trained"] for e in he["rows"]):
        lines += ["", "Carried over: each trained main agent alone (`single`) on HumanEval's test "
                  "split, with the settings of the untrained single model it is paired with "
                  "(`docs/coop/samples/single`):", "", *_pass_rows(he["rows"], ks)]
        he_paired = [c for c in he["comparisons"] if c["per_k"]]
        if he_paired:
            lines += ["", *_paired_rows(he_paired)]
    return "\n".join(lines) + "\n"
