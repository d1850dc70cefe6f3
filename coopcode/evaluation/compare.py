"""`coopcode compare`: two or more bench runs, paired over the problems they share.

Each run after the first is compared with the first (the baseline A): per k, the mean
difference B - A of the per-problem pass@k estimates with its paired standard error and
95% interval, an exact sign test over the problems that gained against those that lost,
and the problems that changed most. Pairing removes the problem-to-problem spread that
dominates an unpaired comparison (on HumanEval most of the variance is which problems are
hard), so a paired interval is much narrower than the two runs' own intervals suggest.
Where the problems were built from shared HumanEval problems (`compose`: each has two
`sources`, and compose:test's 88 reuse 36), the difference's source-clustered interval
(`stats.CLUSTERED_METHOD`) stands beside the per-problem one: problems that share a source
are not independent, and the per-problem interval is then too narrow.

A run is a `coopcode bench --out` folder; `FOLDER:SCHEME` picks one scheme of a run that
holds several. Runs are read, never written: a half-written samples.jsonl is read as far
as its last whole line. What makes two runs not strictly comparable (problem set, n,
temperature, prompts, model, token budget, turns) is said plainly; runs with no problem in
common are refused.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from coopcode.code_analysis.cooperation import cooperation_of
from coopcode.code_analysis.patterns import pattern_rates
from coopcode.core.errors import UserError
from coopcode.evaluation import stats
from coopcode.evaluation.at_k import pass_at_k
from coopcode.evaluation.report import pct
from coopcode.schemes import has_helper

CHANGED_MOST = 5  # problems listed per comparison


@dataclass
class Run:
    """One method of one bench run: per problem, its samples' correctness."""

    label: str
    path: Path
    scheme: str
    meta: dict[str, Any]
    n: int
    passed: dict[str, list[bool]]  # complete problems only: task id -> n results
    # per sample, in the order of `passed` (task by task, sample by sample)
    patterns: list[list[str]] = field(default_factory=list)

    @property
    def config(self) -> dict[str, Any]:
        config = self.meta.get("config")
        return config if isinstance(config, dict) else {}

    @property
    def identity(self) -> dict[str, Any]:
        identity = self.meta.get("identity")
        return identity if isinstance(identity, dict) else {}

    @property
    def ks(self) -> list[int]:
        ks = self.config.get("ks") or [1]
        return sorted(int(k) for k in ks if int(k) <= self.n)

    @property
    def sources(self) -> Mapping[str, tuple[str, ...]]:
        """Each problem's sources, from the problem set the run names."""
        problems = self.config.get("problems")
        return problem_sources(problems) if isinstance(problems, str) else {}

    def pass_at(self, task: str, k: int) -> float:
        results = self.passed[task]
        return pass_at_k(len(results), sum(results), k)

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "path": str(self.path), "scheme": self.scheme,
                "problems": len(self.passed), "n": self.n,
                "problem_set": self.config.get("problems"),
                "temperature": self.identity.get("temperature", self.config.get("temperature")),
                "model": self.meta.get("model"),
                "helper_adapter": self.identity.get("helper_adapter"),
                "main_adapter": self.identity.get("main_adapter"),
                "cooperation": pattern_rates(self.patterns) if has_helper(self.scheme) else {}}


@lru_cache(maxsize=16)
def problem_sources(spec: str) -> Mapping[str, tuple[str, ...]]:
    """task id -> the problems it was built from, for the problems that have some (none on
    HumanEval); empty where `spec` no longer loads (a file moved since the bench)."""
    from coopcode.problems import load_problems

    try:
        problems = load_problems(spec)
    except (UserError, OSError, ValueError):
        return {}
    return {p.task_id: tuple(p.sources) for p in problems if p.sources}


def samples_file(folder: Path) -> Path:
    """A run's samples: samples.jsonl, or samples.jsonl.gz as committed copies keep them."""
    plain = folder / "samples.jsonl"
    packed = folder / "samples.jsonl.gz"
    return packed if packed.exists() and not plain.exists() else plain


def read_records(path: Path) -> list[dict[str, Any]]:
    """A samples file's records (plain or gzipped); a torn line is skipped."""
    records = []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a run still going or killed
            if isinstance(record, dict) and {"scheme", "task_id", "sample"} <= record.keys():
                records.append(record)
    return records


def _split_spec(spec: str) -> tuple[Path, str | None]:
    path = Path(spec)
    if path.is_dir() or ":" not in spec:
        return path, None
    folder, scheme = spec.rsplit(":", 1)
    return Path(folder), scheme or None


def load_runs(spec: str, n: int | None = None) -> list[Run]:
    """Every method of the run `spec` names (one when `spec` is FOLDER:SCHEME); with `n`,
    only samples 0..n-1 of each problem (runs made with the same seed share their seeds)."""
    folder, wanted = _split_spec(spec)
    if not folder.exists():
        raise UserError(f"{folder}: no such folder (a `coopcode bench --out` folder)")
    if not folder.is_dir():
        raise UserError(f"{folder}: a file, where a bench results folder is expected")
    samples = samples_file(folder)
    if not samples.exists():
        raise UserError(f"{folder}: no samples.jsonl: not a bench results folder "
                        "(`coopcode bench --out FOLDER` writes one)")
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        meta = {}
    meta = meta if isinstance(meta, dict) else {}
    records = read_records(samples)
    config = meta.get("config")
    config = config if isinstance(config, dict) else {}
    run_n = int(config.get("n") or 1 + max((int(r["sample"]) for r in records), default=0))
    if n is not None and not 1 <= n <= run_n:
        raise UserError(f"--n {n}: {folder} has {run_n} samples per problem; use 1 to {run_n}")
    n = n or run_n
    by_scheme: dict[str, dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in records:
        if int(r["sample"]) < n:
            by_scheme[str(r["scheme"])][str(r["task_id"])][int(r["sample"])] = r
    schemes = sorted(by_scheme)
    if wanted is not None and wanted not in by_scheme:
        raise UserError(f"{folder} holds no {wanted!r} samples (it holds: "
                        f"{', '.join(schemes) or 'none'})")
    runs = []
    for scheme in [wanted] if wanted else schemes:
        complete = {t: [s[i] for i in range(n)] for t, s in by_scheme[scheme].items()
                    if len(s) == n}
        label = folder.name if len(schemes) == 1 and not wanted else f"{folder.name}:{scheme}"
        ordered = sorted(complete.items())
        runs.append(Run(label, folder, scheme, meta, n,
                        {t: [bool(x.get("passed")) for x in v] for t, v in ordered},
                        [list(cooperation_of(x).patterns) if has_helper(scheme) else []
                         for _t, v in ordered for x in v]))
    if not any(r.passed for r in runs):
        raise UserError(f"{spec}: no problem has all its n={n} samples yet: "
                        "finish the run (rerun the bench with the same --out)")
    return runs


def load_run(spec: str, n: int | None = None) -> Run:
    """The one method `spec` names: FOLDER (holding one scheme) or FOLDER:SCHEME."""
    runs = load_runs(spec, n)
    if len(runs) > 1:
        names = ", ".join(r.scheme for r in runs)
        raise UserError(f"{spec} holds several schemes ({names}): name one as "
                        f"{spec.rstrip('/')}:SCHEME")
    return runs[0]


def summarize_folder(folder: Path) -> Any:
    """A results folder's BenchSummary recomputed from its samples (intervals and patterns
    included, also for folders whose summary.json lacks them); nothing is written."""
    from dataclasses import fields

    from coopcode.evaluation.bench import BenchConfig, summarize

    runs = load_runs(str(folder))
    config = runs[0].config
    known = {f.name for f in fields(BenchConfig)}
    kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                              for k, v in config.items() if k in known}
    kwargs["schemes"] = tuple(r.scheme for r in runs)
    kwargs["n"] = runs[0].n
    kwargs["ks"] = tuple(runs[0].ks) or (1,)
    bench_config = BenchConfig(**kwargs)
    task_ids = runs[0].meta.get("task_ids") or sorted({t for r in runs for t in r.passed})
    summary = summarize(read_records(samples_file(folder)), bench_config, list(task_ids),
                        bench_config.label)
    summary.meta = {"model": runs[0].meta.get("model"), "n": runs[0].n,
                    "temperature": runs[0].identity.get("temperature", config.get("temperature")),
                    "problems": config.get("problems")}
    return summary


def pair_up(specs: list[str], n: int | None = None) -> list[tuple[Run, Run]]:
    """(A, B) pairs: every method of each later run against the first run's same scheme.

    A first run holding one method is the baseline of every later method, whatever its
    scheme (`compare runs/x:single runs/x:sequential` compares two schemes of one run)."""
    if len(specs) < 2:
        raise UserError("compare needs at least two runs: coopcode compare RUN_A RUN_B [RUN_C ...]")
    base = load_runs(specs[0], n)
    by_scheme = {r.scheme: r for r in base}
    pairs = []
    for spec in specs[1:]:
        for run in load_runs(spec, n):
            a = base[0] if len(base) == 1 else by_scheme.get(run.scheme)
            if a is None:
                raise UserError(f"{specs[0]} has no {run.scheme!r} method to pair {run.label} "
                                f"with: name one as {specs[0].rstrip('/')}:SCHEME")
            pairs.append((a, run))
    return pairs


def differences(a: Run, b: Run) -> list[str]:
    """What makes B not strictly comparable with A, one sentence each."""
    notes = []
    only_a, only_b = set(a.passed) - set(b.passed), set(b.passed) - set(a.passed)
    if only_a or only_b or a.config.get("problems") != b.config.get("problems"):
        shared = len(set(a.passed) & set(b.passed))
        notes.append(f"problem sets differ ({a.config.get('problems', '?')}: {len(a.passed)} "
                     f"complete problems, {b.config.get('problems', '?')}: {len(b.passed)}); "
                     f"paired over the {shared} both hold")
    if a.n != b.n:
        notes.append(f"n differs ({a.n} vs {b.n} samples per problem): pass@k is still "
                     f"unbiased per run, for k up to {min(a.n, b.n)}")
    checks = [("temperature", "temperatures"), ("prompts", "prompt templates"),
              ("model_fingerprint", "model weights"), ("max_new_tokens", "token budgets"),
              ("turns", "turns"), ("top_p", "top_p values")]
    for key, what in checks:
        va, vb = a.identity.get(key), b.identity.get(key)
        if va != vb:
            notes.append(f"{what} differ ({va!r} vs {vb!r})")
    if a.meta.get("model") != b.meta.get("model"):
        notes.append(f"models differ ({a.meta.get('model')!r} vs {b.meta.get('model')!r})")
    if a.scheme != b.scheme:
        notes.append(f"schemes differ ({a.scheme} vs {b.scheme})")
    return notes


def compare_runs(a: Run, b: Run, ks: list[int] | None = None) -> dict[str, Any]:
    """B against A over their shared problems, per k (a JSON-ready dict)."""
    shared = sorted(set(a.passed) & set(b.passed))
    if not shared:
        raise UserError(f"{a.label} and {b.label} share no problem ({len(a.passed)} and "
                        f"{len(b.passed)} complete problems): nothing to pair")
    top = min(a.n, b.n)
    ks = sorted(set(ks)) if ks else sorted(set(a.ks) & set(b.ks)) or [1]
    if ks[-1] > top:
        raise UserError(f"k={ks[-1]} is larger than n={top} (the smaller run's samples per "
                        "problem): lower --k")
    sources = {**a.sources, **b.sources}
    # Problems without sources are each their own cluster; none with one: no clustering.
    clusters = (stats.clusters_by_source(shared, sources)
                if any(t in sources for t in shared) else None)
    per_k = []
    for k in ks:
        xa = [a.pass_at(t, k) for t in shared]
        xb = [b.pass_at(t, k) for t in shared]
        paired = stats.paired_difference(xa, xb, clusters=clusters)
        per_k.append({"k": k, "a": stats.mean_interval(xa).to_dict(),
                      "b": stats.mean_interval(xb).to_dict(), **paired.to_dict()})
    k0 = 1  # problems that moved, and the scatter, in pass@1: the number people read
    moved = sorted(shared, key=lambda t: (-abs(b.pass_at(t, k0) - a.pass_at(t, k0)), t))
    changed = [{"task_id": t, "a_passed": sum(a.passed[t]), "a_n": a.n,
                "b_passed": sum(b.passed[t]), "b_n": b.n,
                "diff": b.pass_at(t, k0) - a.pass_at(t, k0)}
               for t in moved[:CHANGED_MOST] if b.pass_at(t, k0) != a.pass_at(t, k0)]
    clustered = {} if clusters is None else {"clustered_method": stats.CLUSTERED_METHOD,
                                             "sources": len({c for own in clusters for c in own})}
    return {"a": a.describe(), "b": b.describe(), "shared_problems": len(shared),
            "notes": differences(a, b), "per_k": per_k, **clustered, "changed_k": k0,
            "changed_most": changed,
            "per_problem": {t: {"a": a.pass_at(t, k0), "b": b.pass_at(t, k0)} for t in shared}}


def _ci(low: float | None, high: float | None, signed: bool = True) -> str:
    if low is None or high is None:
        return "—"
    return f"[{pct(low, signed)}, {pct(high, signed)}]"


def _clustered_ci(row: dict[str, Any], signed: bool = True) -> str:
    """The difference's source-clustered interval, where the problems have sources."""
    got = row.get("clustered")
    return "—" if got is None else _ci(got["low"], got["high"], signed)


def markdown(comparisons: list[dict[str, Any]]) -> str:
    """The comparisons as markdown for a paper or an issue (percentages, B - A)."""
    clustered = any("clustered_method" in c for c in comparisons)
    head = ["A", "B", "k", "A pass@k", "B pass@k", "Δ (B − A)", "95% CI",
            *(["source-clustered 95% CI"] if clustered else []), "gained / lost / tied",
            "sign test p", "problems"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in comparisons:
        for row in c["per_k"]:
            cells = [c["a"]["label"], c["b"]["label"], str(row["k"]),
                     f"{pct(row['a']['mean'])}%", f"{pct(row['b']['mean'])}%",
                     pct(row["diff_mean"], True), _ci(row["diff_low"], row["diff_high"]),
                     *([_clustered_ci(row)] if clustered else []),
                     f"{row['gained']} / {row['lost']} / {row['tied']}", f"{row['p_sign']:.3g}",
                     str(c["shared_problems"])]
            lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Δ in percentage points, paired over the problems both runs hold; "
              f"{100 * stats.LEVEL:.0f}% interval: {stats.METHOD}; sign test: exact, "
              "two-sided, over problems that gained vs lost (ties dropped)."]
    for c in comparisons:
        if "clustered_method" in c:
            lines.append(f"- {c['b']['label']} vs {c['a']['label']}: the {c['shared_problems']}"
                         f" problems come from {c['sources']} HumanEval sources; source-clustered"
                         f" {100 * stats.LEVEL:.0f}% interval: {c['clustered_method']}.")
    for c in comparisons:
        for note in c["notes"]:
            lines.append(f"- {c['b']['label']} vs {c['a']['label']}: {note}.")
        if c["changed_most"]:
            lines += ["", f"Changed most ({c['b']['label']} vs {c['a']['label']}, "
                      f"pass@{c['changed_k']}):", "",
                      "| problem | A passed | B passed | Δ |", "|---|---|---|---|"]
            lines += [f"| {p['task_id']} | {p['a_passed']}/{p['a_n']} | {p['b_passed']}/{p['b_n']}"
                      f" | {pct(p['diff'], True)} |" for p in c["changed_most"]]
    return "\n".join(lines) + "\n"


def print_comparisons(console: Any, comparisons: list[dict[str, Any]]) -> None:
    """The comparisons as rich tables, notes in yellow."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    for c in comparisons:
        a, b = c["a"], c["b"]
        for tag, run in (("A", a), ("B", b)):
            console.print(Text.assemble((f"{tag} ", "bold"), run["label"],
                                        (f"  {run['scheme']}, {run['problems']} problems, "
                                         f"n={run['n']}, T={run['temperature']}, "
                                         f"{run['model']}", "dim")))
        for note in c["notes"]:
            console.print(Text(f"note: {note}", style="yellow"), soft_wrap=True)
        clustered = "clustered_method" in c
        caption = "+/−/=: problems gained, lost, tied; sign p: exact sign test"
        if clustered:
            caption += (f"; clustered: over the {c['sources']} HumanEval sources the problems "
                        f"come from: {c['clustered_method']}")
        table = Table(title=f"B − A over {c['shared_problems']} shared problems, in "
                      "percentage points", title_justify="left", box=box.SIMPLE_HEAD,
                      caption=caption, caption_justify="left")
        cols = ["k", "A pass@k", "B pass@k", "Δ", "SE", "95% CI",
                *(["clustered SE", "clustered 95% CI"] if clustered else []), "+/−/=", "sign p"]
        for col in cols:
            table.add_column(col, justify="right")
        for row in c["per_k"]:
            diff = row["diff_mean"]
            # Δ is coloured by the widest interval shown: the clustered one where there is one.
            sure = row.get("clustered") or {"low": row["diff_low"], "high": row["diff_high"]}
            style = "green" if sure["low"] is not None and sure["low"] > 0 else (
                "red" if sure["high"] is not None and sure["high"] < 0 else "")
            extra = ([pct(row["clustered"]["se"]), _clustered_ci(row, signed=False)]
                     if clustered else [])
            table.add_row(str(row["k"]), pct(row["a"]["mean"]), pct(row["b"]["mean"]),
                          Text(pct(diff, True), style=style), pct(row["diff_se"]),
                          _ci(row["diff_low"], row["diff_high"], signed=False), *extra,
                          f"{row['gained']}/{row['lost']}/{row['tied']}", f"{row['p_sign']:.3g}")
        console.print(table)
        if c["changed_most"]:
            moved = ", ".join(f"{p['task_id']} {p['a_passed']}/{p['a_n']}→{p['b_passed']}/"
                              f"{p['b_n']}" for p in c["changed_most"])
            console.print(Text.assemble(("changed most: ", "dim"), moved), soft_wrap=True)
        console.print()


def _both(a: dict[str, Any], b: dict[str, Any], key: str) -> str:
    """One value when the runs agree, `A/B` when they differ."""
    return str(a[key]) if a[key] == b[key] else f"{a[key]}/{b[key]}"


def write_outputs(out: Path, comparisons: list[dict[str, Any]]) -> list[Path]:
    """compare.md, compare.json and one per-problem scatter per comparison into `out`."""
    from coopcode.evaluation import plots

    out.mkdir(parents=True, exist_ok=True)
    written = [out / "compare.json", out / "compare.md"]
    (out / "compare.json").write_text(json.dumps({"comparisons": comparisons}, indent=2))
    figures = []
    for i, c in enumerate(comparisons, 1):
        a, b = c["a"], c["b"]
        pairs = list(c["per_problem"].values())

        title = (f"{b['label']} (B) against {a['label']} (A): pass@{c['changed_k']} of each "
                 f"of {c['shared_problems']} shared problems\n{_both(a, b, 'model')}, "
                 f"n={_both(a, b, 'n')}, T={_both(a, b, 'temperature')}, "
                 f"problems {_both(a, b, 'problem_set')}")
        name = f"paired-{i}.png"
        plots.plot_paired([p["a"] for p in pairs], [p["b"] for p in pairs],
                          (a["label"], b["label"]), title, out / name)
        figures.append(f"![{b['label']} against {a['label']}, per problem]({name})")
        written.append(out / name)
    (out / "compare.md").write_text(markdown(comparisons) + "\n" + "\n".join(figures) + "\n")
    return written
