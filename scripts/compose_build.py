"""Build the `compose` problem set from HumanEval: `.venv/bin/python scripts/compose_build.py`.

Every value comes from running the canonical solutions in the sandbox (never in this
process): the sandbox returns verdicts, not values, so each input is a test case
`assert False, repr(candidate(ARGS))` and the judge's assertion message (the repr of plain
data decoded on the trusted side) is read back with `ast.literal_eval`. An input whose value
is not a plain literal (a set, nan, an object), is cut short, or whose call raises, times out
or takes over SLOW_SECONDS, is dropped.

Steps, all deterministic (sorted iteration, sha256 orders, no clock, no randomness):
1. Read every HumanEval problem that can be a step (coopcode.problems.composition.Source),
   run its canonical on its literal inputs, and check that its canonical passes its own tests
   under the name `aux` (the contract's check).
2. For each split, pair sources of that split's HumanEval part only (train: humaneval:fit,
   val: humaneval:val, test: humaneval:test): g then f where f has one required parameter
   whose type takes g's return type (coopcode.problems.value_types). Pairs go in sha256
   order; one is kept when its whole has at least MIN_TESTS inputs, two or more different
   values, and f changes g's result somewhere, while neither source is used more than
   MAX_USES times in that role (the set stays varied).
3. Name the kept ones, write their text, and check in the sandbox that every canonical
   passes its tests and every canonical aux passes aux's; then write the JSONL and the doc.

A script beside the set's page writer (compose_doc.py), not part of the installed package:
the package only reads the set it writes (coopcode/problems/data/compose.jsonl).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compose_doc import render_doc  # beside this file

from coopcode.problems.compose import DATA, SPLIT_SOURCES
from coopcode.problems.composition import (
    Composition,
    Source,
    composed_name,
    contract_of,
    example_fits,
    read_source,
)
from coopcode.problems.contract import AUX, Contract
from coopcode.problems.humaneval import load_humaneval, problem_from_record
from coopcode.problems.value_types import (
    MIXED,
    UNKNOWN,
    Type,
    accepts,
    join_all,
    refine,
    value_type,
)
from sandbox import Job, Sandbox, TestRecord, open_sandbox

DOC = Path(__file__).resolve().parents[1] / "docs" / "compose.md"

SALT = "coopcode-compose-v1:"
MIN_TESTS = 3
MAX_USES = 4  # times one source may be the inner step (and, apart, the outer) in a split
MAX_EXAMPLES = 3  # cases shown in the docstring
SLOW_SECONDS = 0.25  # an input slower than this is dropped (a bench job has 5 CPU s in all)
TIMEOUT = 2.0  # CPU seconds per job while building (slow inputs are dropped anyway)
BATCH = 64  # pairs tried at once; only the wasted work depends on it, never the result
DOC_EXAMPLES = 10


# -- values from the sandbox ---------------------------------------------------------------

Args = tuple[Any, ...]  # one input: the arguments of one call


def value_tests(inputs: Sequence[Args]) -> str:
    """Test source whose case i fails with the repr of candidate(*inputs[i]) as its message."""
    lines = [f"    assert False, repr(candidate({', '.join(repr(a) for a in args)}))"
             for args in inputs]
    return "def check(candidate):\n" + "\n".join(lines) + "\n"


def _plain(value: Any) -> bool:
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(_plain(k) and _plain(v) for k, v in value.items())
    return type(value) in (bool, int, float, str, type(None))


_NO_VALUE = object()


@dataclass(frozen=True)
class ValueProgram:
    """A program whose entry point is called on each input in the sandbox (`run_values`)."""

    program: str
    entry_point: str
    inputs: Sequence[Args]


def record_value(record: TestRecord, *, timed: bool = True) -> Any:
    """The value a `value_tests` case reported, or _NO_VALUE (`timed`: also when it took
    longer than SLOW_SECONDS)."""
    if record.status != "failed" or (timed and record.duration > SLOW_SECONDS):
        return _NO_VALUE
    try:
        value = ast.literal_eval(record.message)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_VALUE  # cut short ("..."), or not a literal (nan, an object's repr)
    if not _plain(value) or repr(value) != record.message:
        return _NO_VALUE
    return value


def run_values(sandbox: Sandbox, programs: Sequence[ValueProgram]) -> list[list[Any]]:
    """For each program, the value on each of its inputs (or _NO_VALUE).

    A case that runs out of time or kills the program spoils the cases after it; they run
    again in a job of their own, that case first, so a case is dropped for time or death
    only when it was first in its job (never for what the cases before it used up)."""
    results: list[list[Any]] = [[_NO_VALUE] * len(p.inputs) for p in programs]
    todo = [(i, 0) for i, p in enumerate(programs) if p.inputs]
    slow: list[tuple[int, int]] = []  # cases with a value that took over SLOW_SECONDS
    while todo:
        jobs = [_job(programs[i], programs[i].inputs[start:]) for i, start in todo]
        again = []
        for (i, start), verdict in zip(todo, sandbox.run_many(jobs)):
            if verdict.status == "sandbox_error":  # not the program's doing: no value is lost
                raise RuntimeError(f"the sandbox failed ({verdict.detail}): build again")
            for k, record in enumerate(verdict.tests):
                if record.status == "timeout" or record.error_type == "ProgramDied":
                    rest = start + k + (1 if k == 0 else 0)
                    if rest < len(programs[i].inputs):
                        again.append((i, rest))
                    break
                results[i][start + k] = record_value(record)
                if record.duration > SLOW_SECONDS and record_value(record, timed=False) is not _NO_VALUE:
                    slow.append((i, start + k))
        todo = again
    _time_again(sandbox, programs, slow, results)
    return results


def _job(p: ValueProgram, inputs: Sequence[Args]) -> Job:
    return Job(program=p.program, tests=value_tests(inputs), entry_point=p.entry_point,
               timeout=TIMEOUT)


SLOW_TRIES = 3  # a slow case is timed alone this many times more; its fastest run decides


def _time_again(sandbox: Sandbox, programs: Sequence[ValueProgram],
                slow: list[tuple[int, int]], results: list[list[Any]]) -> None:
    """A case over SLOW_SECONDS is run again alone, up to SLOW_TRIES times, and kept when
    its fastest run is under it: a wall clock on a loaded machine (another job beside the
    build) must not decide what the committed set holds."""
    for _ in range(SLOW_TRIES):
        if not slow:
            return
        jobs = [_job(programs[i], [programs[i].inputs[j]]) for i, j in slow]
        still = []
        for (i, j), verdict in zip(slow, sandbox.run_many(jobs)):
            if verdict.status == "sandbox_error":
                raise RuntimeError(f"the sandbox failed ({verdict.detail}): build again")
            record = verdict.tests[0] if verdict.tests else None
            value = record_value(record) if record is not None else _NO_VALUE
            if value is not _NO_VALUE:
                results[i][j] = value
            elif record is not None and record_value(record, timed=False) is not _NO_VALUE:
                still.append((i, j))
        slow = still


# -- step 1: the sources -------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """A source with what its canonical returns on its inputs, in the sandbox."""

    source: Source
    outputs: tuple[Any, ...]  # per input; _NO_VALUE where it gave none
    returns: Type  # declared return type, unknown parts filled from the outputs

    @property
    def param_type(self) -> Type:
        return self.source.param_types[0] if self.source.param_types else UNKNOWN

    @property
    def can_be_outer(self) -> bool:
        return self.source.required == 1 and self.param_type not in (UNKNOWN, MIXED)

    @property
    def can_be_inner(self) -> bool:
        return sum(1 for v in self.outputs if v is not _NO_VALUE) >= MIN_TESTS

    @property
    def domain(self) -> tuple[float, float] | None:
        """For a number parameter, the range its own tests pass (None: any value).

        A step is asked only about the numbers it was written and tested for: prime_fib(10**6)
        or a Roman numeral of -1 runs forever, and nobody wrote those problems."""
        if self.param_type not in ("int", "float"):
            return None
        seen = [args[0] for args in self.source.inputs
                if args and type(args[0]) in (int, float)]
        return (min(seen), max(seen)) if seen else None

    def takes(self, value: Any) -> bool:
        """Whether `value` is in this step's domain (as outer step)."""
        domain = self.domain
        return domain is None or domain[0] <= value <= domain[1]


def pair_inputs(g: Step, f: Step) -> list[Args]:
    """g's inputs on which g gave a value that f takes."""
    return [args for args, out in zip(g.source.inputs, g.outputs)
            if out is not _NO_VALUE and f.takes(out)]


def read_steps(sandbox: Sandbox, progress: Callable[[str], None]) -> dict[str, Step]:
    """Every HumanEval problem usable as a step, by task id."""
    sources = [s for s in (read_source(p) for p in load_humaneval("all")) if s is not None]
    values = run_values(sandbox, [ValueProgram(s.prompt + s.body, s.name, s.inputs)
                                  for s in sources])
    # The contract's check: g's canonical, renamed aux, passes g's tests with candidate = aux.
    contracts = [contract_of(s) for s in sources]
    verdicts = sandbox.run_many([Job(program=c.program or "", tests=c.tests, entry_point=AUX,
                                     timeout=TIMEOUT) for c in contracts])
    steps = {}
    for source, outputs, verdict in zip(sources, values, verdicts):
        if verdict.status == "sandbox_error":
            raise RuntimeError(f"the sandbox failed ({verdict.detail}): build again")
        if not verdict.passed:
            progress(f"{source.task_id}: its canonical, renamed {AUX}, fails its tests "
                     f"({verdict.status}); not used")
            continue
        seen = join_all(value_type(v) for v in outputs if v is not _NO_VALUE)
        steps[source.task_id] = Step(source, tuple(outputs), refine(source.declared_return, seen))
    progress(f"{len(steps)} of 164 HumanEval problems can be steps")
    return steps


# -- step 2: the pairs ---------------------------------------------------------------------

def candidate_pairs(steps: dict[str, Step], ids: Iterable[str]) -> list[tuple[Step, Step]]:
    """(inner, outer) pairs among `ids` whose types match, in their fixed sha256 order."""
    pool = [steps[t] for t in sorted(ids) if t in steps]
    pairs = [(g, f) for g in pool for f in pool
             if g is not f and g.can_be_inner and f.can_be_outer
             and accepts(f.param_type, g.returns)]
    return sorted(pairs, key=lambda p: _order(p[0].source.task_id, p[1].source.task_id))


def _order(inner: str, outer: str) -> str:
    return hashlib.sha256(f"{SALT}{inner}>{outer}".encode()).hexdigest()


Case = tuple[Args, Any]  # an input of the whole and its value (what Composition holds)


@dataclass(frozen=True)
class Candidate:
    """A pair whose types match, with the inputs of g whose value f takes: tried as a whole."""

    inner: Step
    outer: Step
    inputs: list[Args]


@dataclass(frozen=True)
class KeptPair:
    """A pair kept as a problem, with its whole's cases."""

    inner: Step
    outer: Step
    cases: list[Case]


def whole_cases(inner: Step, inputs: Sequence[Args], values: Sequence[Any]) -> list[Case] | None:
    """The cases of a whole, or None when it is not worth a problem: fewer than MIN_TESTS
    inputs with a value, one value for all, or an outer step that changes nothing."""
    cases = [(args, value) for args, value in zip(inputs, values) if value is not _NO_VALUE]
    if len(cases) < MIN_TESTS or len({repr(v) for _, v in cases}) < 2:
        return None
    by_input = dict(zip(map(repr, inner.source.inputs), inner.outputs))
    if all(repr(by_input[repr(args)]) == repr(value) for args, value in cases):
        return None
    return cases


def choose(sandbox: Sandbox, steps: dict[str, Step], split: str,
           progress: Callable[[str], None]) -> list[KeptPair]:
    """The pairs kept for one split, in the order they were kept."""
    ids = [p.task_id for p in load_humaneval(SPLIT_SOURCES[split])]
    pairs = candidate_pairs(steps, ids)
    as_inner: Counter[str] = Counter()
    as_outer: Counter[str] = Counter()
    kept: list[KeptPair] = []
    i = 0
    while i < len(pairs):
        batch: list[Candidate] = []
        while i < len(pairs) and len(batch) < BATCH:
            g, f = pairs[i]
            inputs = pair_inputs(g, f)
            if as_inner[g.source.task_id] < MAX_USES and as_outer[f.source.task_id] < MAX_USES \
                    and len(inputs) >= MIN_TESTS:
                batch.append(Candidate(g, f, inputs))
            i += 1
        programs = [ValueProgram(_whole_program(c.inner, c.outer), "whole", c.inputs)
                    for c in batch]
        for c, values in zip(batch, run_values(sandbox, programs)):
            inner, outer = c.inner.source.task_id, c.outer.source.task_id
            if as_inner[inner] >= MAX_USES or as_outer[outer] >= MAX_USES:
                continue  # an earlier pair of this batch used the source up
            cases = whole_cases(c.inner, c.inputs, values)
            if cases is None:
                continue
            as_inner[inner] += 1
            as_outer[outer] += 1
            kept.append(KeptPair(c.inner, c.outer, cases))
    progress(f"compose:{split}: {len(kept)} problems from {len(pairs)} pairs whose types match "
             f"(sources: humaneval:{SPLIT_SOURCES[split]})")
    return kept


def _whole_program(g: Step, f: Step) -> str:
    draft = Composition(g.source, f.source, "whole", (), 0)
    return draft.prompt() + draft.canonical_solution()


# -- step 3: the problems ------------------------------------------------------------------

def compositions(chosen: dict[str, list[KeptPair]]) -> dict[str, list[Composition]]:
    """Named and written: a name two pairs would share gets _2, _3 in split order."""
    used: Counter[str] = Counter()
    out: dict[str, list[Composition]] = {}
    for split in SPLIT_SOURCES:
        made = []
        for pair in chosen[split]:
            g, f, cases = pair.inner.source, pair.outer.source, pair.cases
            base = composed_name(g, f)
            used[base] += 1
            name = base if used[base] == 1 else f"{base}_{used[base]}"
            shown = examples(cases, name)
            ordered = [cases[i] for i in shown] + [c for i, c in enumerate(cases) if i not in shown]
            made.append(Composition(g, f, name, tuple(ordered), len(shown)))
        out[split] = sorted(made, key=lambda c: c.name)
    return out


def examples(cases: Sequence[Case], name: str) -> list[int]:
    """Which cases a docstring shows (indices, in order): up to MAX_EXAMPLES that read well,
    each with a value not shown yet (three examples that all return 0 teach little), taken
    in the cases' order (g's own examples come first); at least two where two read well."""
    fitting = [i for i, c in enumerate(cases) if example_fits(*c, name)]
    shown: list[int] = []
    for i in fitting:
        if len(shown) < MAX_EXAMPLES and repr(cases[i][1]) not in {repr(cases[k][1]) for k in shown}:
            shown.append(i)
    shown += [i for i in fitting if i not in shown][:max(0, 2 - len(shown))]
    return sorted(shown)


def record(c: Composition, split: str) -> dict[str, Any]:
    """One line of compose.jsonl: a HumanEval-format record with split, sources, contract."""
    return {"task_id": f"compose/{c.name}", "split": split, "entry_point": c.name,
            "prompt": c.prompt(), "canonical_solution": c.canonical_solution(),
            "test": c.tests(), "sources": [c.inner.task_id, c.outer.task_id],
            "contract": c.contract().to_dict()}


def verify(sandbox: Sandbox, records: Sequence[dict[str, Any]]) -> list[str]:
    """What is wrong with `records`, checked in the sandbox (empty: nothing)."""
    jobs = []
    for r in records:
        jobs.append(Job(program=r["prompt"] + r["canonical_solution"], tests=r["test"],
                        entry_point=r["entry_point"]))
        contract = Contract.from_dict(r["contract"])
        jobs.append(Job(program=contract.program or "", tests=contract.tests, entry_point=AUX))
    verdicts = sandbox.run_many(jobs)
    wrong = []
    for k, r in enumerate(records):
        shown = r["prompt"].count(f">>> {r['entry_point']}(")
        if len(problem_from_record(r, "compose").examples) != shown:
            wrong.append(f"{r['task_id']}: its {shown} examples do not read back as examples")
        whole, aux = verdicts[2 * k], verdicts[2 * k + 1]
        if not whole.passed:
            wrong.append(f"{r['task_id']}: the canonical fails its tests ({whole.status})")
        if not aux.passed:
            wrong.append(f"{r['task_id']}: the canonical aux fails aux's tests ({aux.status})")
    return wrong


def build(sandbox: Sandbox, progress: Callable[[str], None] = lambda _m: None) -> list[dict[str, Any]]:
    """The compose set's records: train, then val, then test, each sorted by name."""
    steps = read_steps(sandbox, progress)
    chosen = {split: choose(sandbox, steps, split, progress) for split in SPLIT_SOURCES}
    records = [record(c, split) for split, made in compositions(chosen).items() for c in made]
    wrong = verify(sandbox, records)
    if wrong:
        raise RuntimeError(f"{len(wrong)} checks failed; first: {wrong[0]}")
    return records


def jsonl(records: Sequence[dict[str, Any]]) -> str:
    """The file's text: one record a line, keys in a fixed order, non-ASCII kept."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DATA, help="the JSONL to write")
    parser.add_argument("--doc", type=Path, default=DOC, help="the Markdown page to write")
    parser.add_argument("--sandbox", default="docker", help="docker (default) or process")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    with open_sandbox(args.sandbox) as sb:
        records = build(sb, say)
    args.out.write_text(jsonl(records), encoding="utf-8")
    args.doc.write_text(render_doc(records, MAX_USES), encoding="utf-8")
    counts = Counter(r["split"] for r in records)
    say(f"wrote {args.out} ({', '.join(f'{s} {counts[s]}' for s in SPLIT_SOURCES)}) and {args.doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
