"""`coopcode paper-table`: the seed paper's Table 1 re-made with this tool, end to end.

The seed paper's four rows on one problem set (the HumanEval test split by default), n
samples per problem, and three more rows of our own (`--rows`):

| row      | what is benched                                        | adapter trained by       |
|----------|--------------------------------------------------------|--------------------------|
| `single` | the base model alone (scheme single)                   | (none)                   |
| `pair`   | the base model as helper and main (scheme sequential)  | (none)                   |
| `grpo`   | one agent trained with GRPO (scheme single)            | `coopcode train --algo grpo`   |
| `magrpo` | the pair trained jointly with MAGRPO (sequential)      | `coopcode train --algo magrpo` |
| `magrpo-seed1` | the same MAGRPO recipe, seed 1 (a replicate)     | ... `--seed 1`           |
| `magrpo-coop`  | MAGRPO with the cooperative reward               | ... `--reward coop`      |
| `magrpo-coop-seed1` | the same, seed 1                            | ... `--reward coop --seed 1` |

`run_paper_table` trains (or resumes) the rows' adapters when their run folders are not
complete, then runs (or resumes) each row's bench in `<out>/<row>/`, then builds the table
from the rows' summaries. `build_table` needs nothing but those summaries (each row's
per-problem estimates), so a table is recomputed from committed summaries alone
(`coopcode paper-table --from-summaries DIR`, and tests/test_paper_table.py): every number
in it comes from the runs. Each row is compared with the single model, paired over the
problems (`coopcode.evaluation.stats.paired_difference`, as `coopcode compare` does).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coopcode.code_analysis.patterns import PATTERNS
from coopcode.core.errors import UserError
from coopcode.core.run_lock import LOCK_FILE, RunLock
from coopcode.evaluation import stats
from coopcode.evaluation.report import pct
from coopcode.records.vocabulary import Role
from coopcode.schemes import has_helper

if TYPE_CHECKING:
    from coopcode.engines.base import Engine

SUMMARIES = "summaries"  # <out>/summaries/<row>.json: what the table was built from


@dataclass(frozen=True)
class TableRow:
    key: str
    method: str
    scheme: str
    algo: str | None  # the training that makes its adapter (None: the base model)
    paper_pass_at_1: float | None  # the seed paper, Qwen2.5-Coder-3B, HumanEval (40 problems), n=10
    reward: str | None = None  # the training's reward (None: the algorithm's seed reward)
    seed: int = 0  # the training's seed
    options: tuple[tuple[str, Any], ...] = ()  # the training's settings beyond the table's
    alone: bool = False  # the trained pair's main agent benched alone (scheme single)

    @property
    def adapter_roles(self) -> tuple[Role, ...]:
        if self.alone:
            return (Role.MAIN,)
        return {"grpo": (Role.MAIN,), "magrpo": (Role.HELPER, Role.MAIN)}.get(self.algo or "", ())


CREDIT_OPTIONS = (("agent_credit", "joint"), ("problems", "humaneval:fit"), ("eval_every", 10),
                  ("save_every", 5))

ROWS = (
    TableRow("single", "Single model (untrained)", "single", None, 29.25),
    TableRow("pair", "Prompted pair, sequential (untrained)", "sequential", None, 24.00),
    TableRow("grpo", "Single agent trained with GRPO", "single", "grpo", 14.50),
    TableRow("magrpo", "Pair trained with MAGRPO", "sequential", "magrpo", 44.25),
    TableRow("magrpo-seed1", "Pair trained with MAGRPO, seed 1", "sequential", "magrpo", None,
             seed=1),
    TableRow("magrpo-coop", "Pair trained with MAGRPO, coop reward", "sequential", "magrpo", None,
             reward="coop"),
    TableRow("magrpo-coop-seed1", "Pair trained with MAGRPO, coop reward, seed 1", "sequential",
             "magrpo", None, reward="coop", seed=1),
    # The recipe chosen on the validation split (BENCHMARKS.md, "Cooperation measured
    # honestly"): the credit reward with joint credit, trained on humaneval:fit (the train
    # split without the validation problems), validated every 10 steps; and each pair's main
    # agent alone, to ask whether the pair beats its own main.
    *(TableRow(f"magrpo-credit{tail}{alone}", f"{what}, credit reward{seed_name}", scheme,
               "magrpo", None, reward="credit", seed=seed, options=CREDIT_OPTIONS,
               alone=bool(alone))
      for seed, tail, seed_name in ((0, "", ""), (1, "-seed1", ", seed 1"))
      for alone, what, scheme in (("", "Pair trained with MAGRPO", "sequential"),
                                  ("-main", "Main agent alone, of the pair trained with MAGRPO",
                                   "single"))),
)
ROW_KEYS = tuple(r.key for r in ROWS)
SEED_ROWS = ("single", "pair", "grpo", "magrpo")  # the seed paper's table, the default --rows
BASELINE = "single"

# The training both adapters get: the same budget, learning rate, token budget and seed.
# G=4 and one problem per step as in the seed paper; 192 new tokens per completion (the
# paper's bodies are short; the bench still allows 384).
TRAINING: dict[str, Any] = {"steps": 60, "group_size": 4, "learning_rate": 1e-4, "max_new_tokens": 192,
            "seed": 0, "problems_per_step": 1, "save_every": 1, "problems": "humaneval:train"}


def row(key: str) -> TableRow:
    for r in ROWS:
        if r.key == key:
            return r
    raise UserError(f"unknown row {key!r}: use one of {', '.join(ROW_KEYS)}")


def parse_rows(text: str) -> list[TableRow]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    if not keys:
        raise UserError(f"--rows {text!r}: name at least one of {', '.join(ROW_KEYS)}")
    return [row(k) for k in dict.fromkeys(keys)]


def default_adapter_run(key: str, model: str | None) -> Path:
    """A row's run folder: checkpoints/<algo>[-<reward>]-0.5b[-seed<N>] for the embedded
    model (checkpoints/magrpo-coop-0.5b-seed1), with the model's name otherwise."""
    from coopcode.models import DEFAULT_MODEL

    spec = row(key)
    stem = f"{spec.algo}-{spec.reward}" if spec.reward else str(spec.algo)
    seed = f"-seed{spec.seed}" if spec.seed else ""
    if model in (None, DEFAULT_MODEL):
        return Path("checkpoints") / f"{stem}-0.5b{seed}"
    name = "".join(c if c.isalnum() or c in "-._" else "-" for c in Path(model).name.lower())
    return Path("checkpoints") / f"{stem}-{name}{seed}"


def adapter_runs(model: str | None, given: Mapping[str, Path | None],
                 pairs: Sequence[str] = ()) -> dict[str, Path]:
    """Every trained row's run folder: its default, or `given[row]`, or a `ROW=FOLDER` pair
    (`--adapter`); a bad pair is a UserError."""
    runs = {spec.key: default_adapter_run(spec.key, model) for spec in ROWS if spec.algo}
    runs.update({key: path for key, path in given.items() if path is not None})
    for pair in pairs:
        key, sep, folder = pair.partition("=")
        if not sep or not folder.strip():
            raise UserError(f"--adapter {pair!r}: write ROW=FOLDER, e.g. magrpo-coop=runs/my-coop")
        if row(key.strip()).algo is None:
            raise UserError(f"--adapter {pair!r}: row {key.strip()!r} has no adapter (untrained)")
        runs[key.strip()] = Path(folder.strip())
    return runs


# -- the adapters ------------------------------------------------------------------------

def adapter_state(run: Path, roles: Sequence[str]) -> tuple[str, str]:
    """(state, one line on it): `complete` (trained to its total steps, or a plain adapter
    folder with no training record), `resumable` (stopped with a trainer state), `absent`,
    or `stuck` (stopped with nothing to resume from)."""
    from coopcode.training import checkpoint as ckpt

    if not run.exists() or (run.is_dir() and not any(p.name != LOCK_FILE for p in run.iterdir())):
        return "absent", f"{run}: not trained yet"
    manifest_path = run / "manifest.json"
    has_adapters = all((run / role / "adapter_config.json").exists() for role in roles)
    if manifest_path.exists():
        try:
            manifest = json.loads(manifest_path.read_text())
            step, total = int(manifest["step"]), int(manifest["total_steps"])
        except (OSError, ValueError, KeyError, TypeError):
            raise UserError(f"{manifest_path}: unreadable: not a coopcode training run") from None
        if step >= total and has_adapters:
            return "complete", f"{run}: trained, {step}/{total} steps"
        if ckpt.latest_state(run) is not None:
            return "resumable", f"{run}: at step {step}/{total}, resuming"
        return "stuck", (f"{run} stopped at step {step}/{total} and holds no trainer state to "
                         "resume from: pass --no-train to bench it as it is, or remove it")
    if ckpt.latest_state(run) is not None or (run / "config.json").exists():
        return "resumable", f"{run}: started, resuming"  # with no state saved: from step 0
    if has_adapters:
        return "complete", f"{run}: adapter folders (no training record), used as they are"
    raise UserError(f"{run}: neither a training run nor adapter folders ({', '.join(roles)}/)")


# -- the table ----------------------------------------------------------------------------

# Beyond each row vs the single model: what MAGRPO training did to the prompted pair, and the
# seed paper's headline, the pair trained with MAGRPO vs one agent trained with GRPO; each
# other trained pair against the same, and the coop rows against the seed-reward runs.
OTHER_COMPARISONS = (
    ("magrpo", "pair"), ("magrpo", "grpo"),
    ("magrpo-seed1", "pair"), ("magrpo-seed1", "grpo"),
    ("magrpo-coop", "pair"), ("magrpo-coop", "grpo"), ("magrpo-coop", "magrpo"),
    ("magrpo-coop", "magrpo-seed1"),
    ("magrpo-coop-seed1", "pair"), ("magrpo-coop-seed1", "grpo"), ("magrpo-coop-seed1", "magrpo"),
    ("magrpo-coop-seed1", "magrpo-seed1"),
    *((f"magrpo-credit{tail}", against) for tail in ("", "-seed1")
      for against in ("pair", "grpo", "magrpo", "magrpo-seed1", "magrpo-coop", "magrpo-coop-seed1",
                      f"magrpo-credit{tail}-main")),
)

# What a row's samples look like, from its summary: how long, how often they run, how often
# main calls the helper (a trained row that wins by writing shorter code shows here), and who
# did the work: main does work of its own with the helper's answer, the helper's code alone
# solves the task (coopcode.code_analysis.cooperation; summaries from before a rate show "—";
# a column is left out when no row has it).
PROFILE = {"mean_tokens": ("Tokens per sample", "{:.1f}"),
           "runnable_rate": ("Programs that run", "{:.1%}"),
           "main_calls_helper_rate": ("Main calls the helper", "{:.1%}"),
           "own_work_rate": ("Main does own work with the helper's answer", "{:.1%}"),
           "helper_solves_rate": ("The helper alone solves the task", "{:.1%}"),
           "both_needed_rate": ("Both needed (of passing samples)", "{:.1%}")}
HELPER_FIGURES = ("main_calls_helper_rate", "own_work_rate", "helper_solves_rate",
                  "both_needed_rate")


def _method_row(summary: Mapping[str, Any], key: str) -> dict[str, Any] | None:
    rows = summary.get("rows") or []
    want = row(key).scheme
    found = [r for r in rows if r.get("scheme") == want] or list(rows)
    return found[0] if found else None


def build_table(summaries: Mapping[str, Mapping[str, Any]], ks: Sequence[int] = (1, 3, 5, 10)
                ) -> dict[str, Any]:
    """The table from each row's bench summary (summary.json's dict): per row pass@k with
    its 95% interval, the paired comparison with the single model, the cooperation pattern
    rates; rows without a summary are listed as not run."""
    got_rows = {key: _method_row(summary, key) for key, summary in summaries.items()}
    base = got_rows.get(BASELINE)
    out_rows = []
    for spec in ROWS:
        if spec.key not in SEED_ROWS and spec.key not in summaries:
            continue  # our own rows are in the table when they were run
        entry: dict[str, Any] = {"row": spec.key, "method": spec.method, "scheme": spec.scheme,
                                 "paper_pass@1": spec.paper_pass_at_1}
        summary = summaries.get(spec.key)
        got = got_rows.get(spec.key)
        if summary is None or got is None:
            out_rows.append({**entry, "run": False})
            continue
        meta = summary.get("meta") or {}
        entry.update(run=True, problems=got["problems"], samples=got["samples"],
                     n=meta.get("n"), wall_seconds=meta.get("wall_seconds"),
                     model=meta.get("model"), adapters=meta.get("adapters"),
                     cooperation=got.get("cooperation") or {},
                     samples_profile={key: got.get(key) for key in PROFILE})
        per_problem = got.get("per_problem") or {}
        for k in ks:  # recomputed from the per-problem estimates, not copied from the row
            values = [p[f"pass@{k}"] for p in per_problem.values() if f"pass@{k}" in p]
            if per_problem and len(values) == len(per_problem):
                est = stats.mean_interval(values)
                entry[f"pass@{k}"] = est.mean
                entry[f"pass@{k}_ci"] = None if est.low is None else [est.low, est.high]
        if base is not None and spec.key != BASELINE:
            entry["vs_single"] = _paired(base, got, ks)
        out_rows.append(entry)
    others = []
    for key, against in OTHER_COMPARISONS:
        a, b = got_rows.get(against), got_rows.get(key)
        if a is not None and b is not None:
            others.append({"row": key, "method": row(key).method, "against": against,
                           "against_method": row(against).method, "per_k": _paired(a, b, ks)})
    return {"ks": list(ks), "rows": out_rows, "baseline": BASELINE, "other_comparisons": others,
            "interval": {"level": stats.LEVEL, "method": stats.METHOD}}


def _paired(a: Mapping[str, Any], b: Mapping[str, Any], ks: Sequence[int]) -> list[dict[str, Any]]:
    """B - A per k over the problems both rows hold, from their per-problem estimates."""
    pa, pb = a.get("per_problem") or {}, b.get("per_problem") or {}
    shared = sorted(set(pa) & set(pb))
    if not shared:
        return []
    out = []
    for k in ks:
        key = f"pass@{k}"
        if not all(key in pa[t] and key in pb[t] for t in shared):
            continue
        paired = stats.paired_difference([pa[t][key] for t in shared], [pb[t][key] for t in shared])
        out.append({"k": k, "problems": len(shared), **paired.to_dict()})
    return out


def _paired_line(method: str, d: Mapping[str, Any], against: str | None = None) -> str:
    cells = [method, *([against] if against is not None else []), str(d["k"]),
             pct(d["diff_mean"], True), f"[{pct(d['diff_low'], True)}, {pct(d['diff_high'], True)}]",
             f"{d['gained']} / {d['lost']} / {d['tied']}", f"{d['p_sign']:.3g}"]
    return "| " + " | ".join(cells) + " |"


def _number(x: Any, form: str) -> str:
    return form.format(x) if isinstance(x, int | float) else "—"


def estimate_cell(value: float | None, ci: Sequence[float | None] | None) -> str:
    """A rate and its interval in percent, "35.25 [23.46, 47.04]" ("—" for none)."""
    if value is None:
        return "—"
    return f"{pct(value)} [{pct(ci[0])}, {pct(ci[1])}]" if ci else pct(value)


def pass_cell(entry: Mapping[str, Any], k: int) -> str:
    """A row's pass@k cell: the percentage and its interval, "35.25 [23.46, 47.04]"."""
    return estimate_cell(entry.get(f"pass@{k}"), entry.get(f"pass@{k}_ci"))


def render_markdown(table: Mapping[str, Any]) -> str:
    """The table as markdown: pass@k with intervals beside the paper's pass@1, the paired
    comparisons with the single model, the cooperation patterns of the pair rows."""
    ks, rows = table["ks"], table["rows"]
    head = ["Method", *[f"Pass@{k} [95% CI]" for k in ks], "Paper Pass@1 (3B)", "Problems × n",
            "Wall time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in rows:
        paper = _number(e["paper_pass@1"], "{:.2f}")
        if not e["run"]:
            lines.append("| " + " | ".join([e["method"], *["not run"] * len(ks), paper,
                                            "—", "—"]) + " |")
            continue
        wall = e.get("wall_seconds")
        lines.append("| " + " | ".join([
            e["method"], *[pass_cell(e, k) for k in ks], paper,
            f"{e['problems']} × {e.get('n') or '?'}",
            f"{wall / 60:.0f} min" if isinstance(wall, int | float) else "—"]) + " |")
    lines += ["", f"Percentages; {100 * table['interval']['level']:.0f}% intervals: "
              f"{table['interval']['method']}."]
    compared = [e for e in rows if e.get("vs_single")]
    if compared:
        lines += ["", "Paired with the single model over the problems both rows hold "
                  "(Δ in percentage points; sign test: exact, two-sided, problems gained vs lost):",
                  "", "| Method | k | Δ vs single | 95% CI | gained / lost / tied | sign test p |",
                  "|---|---|---|---|---|---|"]
        for e in compared:
            lines += [_paired_line(e["method"], d) for d in e["vs_single"]]
    others = [c for c in table.get("other_comparisons") or [] if c["per_k"]]
    if others:
        lines += ["", "The training's effect on the pair, and the seed paper's headline (the "
                  "MAGRPO pair vs the GRPO single agent), paired the same way:", "",
                  "| Method | against | k | Δ | 95% CI | gained / lost / tied | sign test p |",
                  "|---|---|---|---|---|---|---|"]
        for c in others:
            lines += [_paired_line(c["method"], d, c["against_method"]) for d in c["per_k"]]
    profiled = [e for e in rows if e["run"] and e.get("samples_profile")]
    if profiled:
        columns = {key: how for key, how in PROFILE.items()
                   if any(e["samples_profile"].get(key) is not None for e in profiled)}
        lines += ["", "What the samples are (all turns' tokens of a sample; share of samples):", "",
                  "| Method | " + " | ".join(label for label, _ in columns.values()) + " |",
                  "|" + "---|" * (len(columns) + 1)]
        for e in profiled:
            p = dict(e["samples_profile"])
            if not has_helper(e["scheme"]):  # no helper: does not apply
                p.update(dict.fromkeys(HELPER_FIGURES))
            cells = [_number(p.get(key), form) for key, (_, form) in columns.items()]
            lines.append(f"| {e['method']} | " + " | ".join(cells) + " |")
    pairs = [e for e in rows if e["run"] and e.get("cooperation")]
    if pairs:
        lines += ["", "Cooperation patterns of the pair rows (share of samples; a program may "
                  "carry several):", "", "| Method | " + " | ".join(PATTERNS) + " |",
                  "|" + "---|" * (len(PATTERNS) + 1)]
        for e in pairs:
            cells = [f"{100 * float(e['cooperation'].get(p, 0.0)):.1f}%" for p in PATTERNS]
            lines.append(f"| {e['method']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def read_summaries(folder: Path) -> dict[str, dict[str, Any]]:
    """`<folder>/<row>.json` for each row present (what `--from-summaries` reads)."""
    if not folder.is_dir():
        raise UserError(f"{folder}: no such folder of row summaries (<row>.json, e.g. single.json)")
    found = {}
    for spec in ROWS:
        path = folder / f"{spec.key}.json"
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
                raise UserError(f"{path}: not a bench summary ({e})") from None
            if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
                raise UserError(f"{path}: not a bench summary (no rows)")
            found[spec.key] = data
    if not found:
        raise UserError(f"{folder}: holds no row summary ({', '.join(f'{k}.json' for k in SEED_ROWS)}, "
                        "...)")
    return found


def summary_of_run(folder: Path) -> dict[str, Any] | None:
    """A row's summary recomputed from its bench folder's samples (None: nothing complete),
    with the bench's wall time and the adapters its meta.json pinned (so a row benched
    before keeps them when the table is rebuilt)."""
    from coopcode.evaluation.compare import summarize_folder

    if not (folder / "samples.jsonl").exists():
        return None
    try:
        summary = summarize_folder(folder).to_dict()
    except UserError:
        return None  # no problem complete yet
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        meta = {}
    identity = meta.get("identity") or {}
    adapters = {role: identity[f"{role}_adapter"] for role in (Role.HELPER, Role.MAIN)
                if identity.get(f"{role}_adapter")}
    summary["meta"].update(wall_seconds=meta.get("wall_seconds"), adapters=adapters or None,
                           folder=str(folder))
    return summary


SAMPLES = "samples"  # <out>/samples/<row>/: each row's samples (gzipped) and meta.json


def keep_samples(out: Path, key: str, summary: Mapping[str, Any]) -> None:
    """A row's samples beside its summary, `<out>/samples/<row>/samples.jsonl.gz` and its
    meta.json, copied from the bench folder the summary was computed from (a table rebuilt
    from summaries alone keeps the copies it has): every figure of the row can then be
    recomputed from committed files (`coopcode.evaluation.compare.summarize_folder`)."""
    folder = (summary.get("meta") or {}).get("folder")
    if not folder or not (Path(folder) / "samples.jsonl").exists():
        return
    import gzip
    import shutil

    dest = out / SAMPLES / key
    dest.mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / "samples.jsonl", "rb") as src, \
            gzip.GzipFile(dest / "samples.jsonl.gz", "wb", compresslevel=9, mtime=0) as gz:
        shutil.copyfileobj(src, gz)
    shutil.copyfile(Path(folder) / "meta.json", dest / "meta.json")


def write_table(out: Path, summaries: Mapping[str, Mapping[str, Any]], ks: Sequence[int]) -> dict[str, Any]:
    """table.md, table.json, table.png and summaries/<row>.json into `out`."""
    from coopcode.evaluation import plots

    table = build_table(summaries, ks)
    out.mkdir(parents=True, exist_ok=True)
    folder = out / SUMMARIES
    folder.mkdir(exist_ok=True)
    # Written in place, never removed first: `--from-summaries` may read from this very folder.
    for spec in ROWS:
        path = folder / f"{spec.key}.json"
        if spec.key in summaries:
            path.write_text(json.dumps(summaries[spec.key], indent=1, default=str) + "\n")
        else:
            path.unlink(missing_ok=True)  # a row no longer in the table
    for key, summary in summaries.items():
        keep_samples(out, key, summary)
    (out / "table.json").write_text(json.dumps(table, indent=2) + "\n")
    text = render_markdown(table)
    drawn = [e for e in table["rows"] if e["run"]]
    if drawn:
        try:
            first = next(iter(summaries.values())).get("meta") or {}
            plots.plot_pass_at_k(drawn, ks, first, out / "table.png",
                                 what="The seed paper's Table 1 re-made: pass@k, 95% intervals")
            text += "\n![pass@k of each row with 95% intervals](table.png)\n"
        except Exception as e:  # a figure is a view: the table stands without it
            text += f"\n(figure not drawn: {type(e).__name__}: {e})\n"
    (out / "table.md").write_text(text)
    return table


# -- the whole run ------------------------------------------------------------------------

@dataclass
class TablePlan:
    rows: list[TableRow]
    out: Path
    adapter_runs: dict[str, Path]  # row key -> run folder (rows with an adapter)
    train: bool = True
    train_steps: int = field(default_factory=lambda: int(TRAINING["steps"]))
    train_max_new_tokens: int = field(default_factory=lambda: int(TRAINING["max_new_tokens"]))


def training_config(spec: TableRow, model: str | None, steps: int, max_new_tokens: int) -> Any:
    """The row's training: the table's shared budget, with the row's algorithm, reward, seed."""
    from coopcode.training.config import TrainConfig

    settings = {**TRAINING, "steps": steps, "max_new_tokens": max_new_tokens, "seed": spec.seed,
                **dict(spec.options)}
    return TrainConfig(algo=str(spec.algo), model=model, reward=spec.reward, **settings)


def check_plan(plan: TablePlan) -> dict[str, tuple[str, str]]:
    """Each row's adapter run state (by row key), refusing what cannot go on (before
    anything loads)."""
    states = {}
    for spec in plan.rows:
        RunLock.check_free(plan.out / spec.key, "bench run")
        if spec.algo is None:
            continue
        run = plan.adapter_runs[spec.key]
        RunLock.check_free(run, "training run")
        state, line = adapter_state(run, spec.adapter_roles)
        if state == "stuck" and plan.train:
            raise UserError(line)
        if state in ("absent", "resumable") and not plan.train:
            raise UserError(f"{run}: not trained to the end ({line.split(': ', 1)[-1]}): "
                            "drop --no-train to train it, or leave the row out with --rows")
        states[spec.key] = (state, line)
    return states


def bench_row_adapters(spec: TableRow, run: Path | None) -> dict[Role, str]:
    """The adapter folder per role a row's bench loads (none for the untrained rows)."""
    if run is None:
        return {}
    from coopcode.engines.agents import resolve_adapter_path

    return {role: str(resolve_adapter_path(str(run), role)) for role in spec.adapter_roles}


def run_paper_table(plan: TablePlan, *, model: str | None, bench_config: Any,
                    open_engine: Callable[[], Engine], sandbox: Any,
                    train_one: Callable[[Any, Path, bool], Any], emit: Any,
                    log: Callable[[str], None]) -> dict[str, Any]:
    """Train what is missing, bench each row (resuming), write the table into `plan.out`."""
    from coopcode.evaluation.bench import run_bench
    from coopcode.problems import load_problems

    states = check_plan(plan)
    for key, (state, line) in states.items():
        log(line)
        if state in ("absent", "resumable"):
            run = plan.adapter_runs[key]
            train_one(training_config(row(key), model, plan.train_steps, plan.train_max_new_tokens),
                      run, state == "resumable")
            state, line = adapter_state(run, row(key).adapter_roles)
            if state != "complete":  # stopped (Ctrl-C): rerunning the table resumes it
                raise UserError(f"{line}; rerun `coopcode paper-table` to go on")
    problems = load_problems(bench_config.problems)
    engine = open_engine()
    with engine:
        for spec in plan.rows:
            adapters = bench_row_adapters(spec, plan.adapter_runs.get(spec.key))
            names = {}
            for role, path in adapters.items():
                name = f"{spec.key}-{role}"
                if name not in engine.adapters():
                    engine.load_adapter(name, path)
                names[role] = (name, path)
            config = _row_config(bench_config, spec)
            log(f"bench {spec.key}: {spec.method} -> {plan.out / spec.key}")
            run_bench(config, problems, engine, sandbox, plan.out / spec.key,
                      helper_adapter=names.get(Role.HELPER), main_adapter=names.get(Role.MAIN),
                      emit=emit)
    summaries: dict[str, dict[str, Any]] = {}
    for spec in ROWS:  # the rows benched now, and those benched before
        summary = summary_of_run(plan.out / spec.key)
        if summary is not None:
            summaries[spec.key] = summary
    return write_table(plan.out, summaries, bench_config.ks)


def _row_config(bench_config: Any, spec: TableRow) -> Any:
    from dataclasses import replace

    return replace(bench_config, schemes=(spec.scheme,))
