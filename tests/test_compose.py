"""The compose set (issue 40): rebuilt identically in the real Docker sandbox, every canonical
and every canonical aux passing in the sandbox, splits disjoint by source problem; the
contract in users' problem files; `coopcode problems list` and `problems show`; every scheme
given the same statement of the task, aux's examples included (issue 53)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _experiments import load
from cli_helpers import assert_refused, coopcode

from coopcode.core.errors import ProblemError
from coopcode.problem_sets.catalog import count_tests
from coopcode.problems import Problem, load_compose, load_humaneval, load_problems
from coopcode.problems.compose import DATA
from coopcode.problems.composition import rename_in_code, rename_in_words, without_doctests
from coopcode.problems.value_types import Type, accepts, annotation_type, join, show
from sandbox import Job, Sandbox, open_sandbox

compose_build = load("scripts/compose_build.py")  # scripts, outside the package
compose_doc = load("scripts/compose_doc.py")
DOC, MAX_USES, build, jsonl = (compose_build.DOC, compose_build.MAX_USES, compose_build.build,
                               compose_build.jsonl)
render_doc, shown_records = compose_doc.render_doc, compose_doc.shown_records

SPLITS = {"train": "fit", "val": "val", "test": "test"}


@pytest.fixture(scope="module")
def docker_sandbox() -> Iterator[Sandbox]:
    with open_sandbox("docker") as sb:
        yield sb


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DATA.read_text(encoding="utf-8").splitlines()]


# -- the committed data -----------------------------------------------------------------------

@pytest.mark.docker
def test_rebuild_is_identical_to_the_committed_file(docker_sandbox: Sandbox) -> None:
    """The build (values from the sandbox, ~10 s) gives the committed bytes, and the doc page
    is the one written from them."""
    records = build(docker_sandbox)
    assert jsonl(records) == DATA.read_text(encoding="utf-8")
    assert render_doc(records, MAX_USES) == DOC.read_text(encoding="utf-8")


def test_sizes_and_splits_disjoint_by_source() -> None:
    by_split = {split: load_compose(split) for split in SPLITS}
    # Pinned: as many as the types allow under the reuse cap (the issue aimed at >= 120/40/40).
    assert {s: len(ps) for s, ps in by_split.items()} == {"train": 179, "val": 40, "test": 88}
    assert load_problems("compose") == by_split["test"]
    assert len(load_compose("all")) == 307
    used = {}
    for split, problems in by_split.items():
        allowed = {p.task_id for p in load_humaneval(SPLITS[split])}
        used[split] = {s for p in problems for s in p.sources}
        assert used[split] <= allowed, split
    assert not used["train"] & used["val"] and not used["train"] & used["test"] \
        and not used["val"] & used["test"]
    with pytest.raises(ProblemError, match="use one of train, val, test, all"):
        load_problems("compose:dev")


def test_every_problem_is_whole() -> None:
    """Two sources, a contract for aux, >= 3 tests, examples that are the first tests."""
    problems = load_compose("all")
    assert len({p.task_id for p in problems}) == len({p.entry_point for p in problems}) == 307
    for p in problems:
        assert len(p.sources) == 2 and p.sources[0] != p.sources[1], p.task_id
        assert p.contract is not None and p.contract.entry_point == "aux", p.task_id
        assert p.contract.signature.startswith("def aux(") and p.contract.solution, p.task_id
        assert count_tests(p.tests) >= 3 and count_tests(p.contract.tests) >= 1, p.task_id
        assert p.examples, p.task_id
        for example in p.examples:  # each shown example is a test of the whole
            assert example.removeprefix("assert ").split(" == ")[0] in p.tests, (p.task_id, example)
        assert "aux" in p.prompt and p.entry_point in p.prompt and ">>>" in p.prompt


@pytest.mark.docker
def test_canonicals_pass_and_a_constant_does_not(docker_sandbox: Sandbox) -> None:
    """In the sandbox: every canonical whole passes its tests, every canonical aux passes aux's,
    and a function returning one constant fails (each problem has two values at least)."""
    problems = load_compose("all")
    jobs = []
    for p in problems:
        assert p.contract is not None and p.contract.program is not None and p.canonical_solution
        jobs += [Job(program=p.prompt + p.canonical_solution, tests=p.tests, entry_point=p.entry_point),
                 Job(program=p.contract.program, tests=p.contract.tests, entry_point="aux"),
                 Job(program=p.prompt + f"    return {_first_expected(p.tests)}\n", tests=p.tests,
                     entry_point=p.entry_point)]
    verdicts = docker_sandbox.run_many(jobs)
    for k, p in enumerate(problems):
        whole, aux, constant = verdicts[3 * k: 3 * k + 3]
        assert whole.passed, (p.task_id, whole.status, whole.detail)
        assert aux.passed, (p.task_id, aux.status, aux.detail)
        assert not constant.passed and constant.runnable, (p.task_id, constant.status)


def _first_expected(tests: str) -> str:
    """The expected value of the first assert: `candidate(x) == V` or `abs(candidate(x) - V) < e`."""
    first = next(n for n in ast.walk(ast.parse(tests)) if isinstance(n, ast.Assert))
    assert isinstance(first.test, ast.Compare)
    if isinstance(first.test.ops[0], ast.Eq):
        return ast.unparse(first.test.comparators[0])
    call = first.test.left
    assert isinstance(call, ast.Call) and isinstance(call.args[0], ast.BinOp)
    return ast.unparse(call.args[0].right)


def test_doc_shows_ten_problems_and_the_counts() -> None:
    records = _records()
    doc = DOC.read_text(encoding="utf-8")
    shown = shown_records(records)
    assert len(shown) == 10 and doc.count("\n### `compose/") == 10
    assert all(f"`{r['task_id']}`" in doc for r in shown)
    for line in ("| `compose:train` | 179 |", "| `compose:val` | 40 |", "| `compose:test` | 88 |"):
        assert line in doc


# -- the same statement for every scheme (issue 53) --------------------------------------------

def test_the_prompt_states_aux_as_its_contract_does() -> None:
    """aux's part of the prompt is the contract's docstring word for word, `>>>` examples and
    all (what the helper's contract shows, a single agent reads); f's `>>>` examples are out;
    the public examples (a revision's feedback) are the whole's alone, never `aux(...)`."""
    outer_names = {p.task_id: p.entry_point for p in load_humaneval("all")}
    with_examples = {split: 0 for split in SPLITS}
    for split in SPLITS:
        for p in load_compose(split):
            assert p.contract is not None
            aux_part = "\n".join(f"        {line}".rstrip()
                                 for line in p.contract.docstring.splitlines())
            assert aux_part in p.prompt, p.task_id
            assert p.prompt.count(">>> aux(") == p.contract.docstring.count(">>> aux("), p.task_id
            with_examples[split] += ">>> aux(" in p.prompt
            assert f">>> {outer_names[p.sources[1]]}(" not in p.prompt, p.task_id
            assert len(p.examples) == p.prompt.count(f">>> {p.entry_point}("), p.task_id
            assert not any("aux" in e for e in p.examples), p.task_id
            assert p.public_tests.count("candidate(") == len(p.examples), p.task_id
    assert with_examples == {"train": 84, "val": 22, "test": 46}  # 152 of 307


def test_no_scheme_shows_aux_examples_the_single_agent_is_not_shown() -> None:
    """Every first prompt of every scheme, chat and completion: the `>>> aux(` examples it
    shows are those the single agent's prompt shows, which are the contract's."""
    from coopcode.engines import ScriptedEngine
    from coopcode.schemes import PromptBook
    from coopcode.schemes.contracts import contract_stub

    def aux_examples(text: str) -> set[str]:
        return {line.strip() for line in text.splitlines() if line.strip().startswith(">>> aux(")}

    (problem,) = [p for p in load_compose("test") if p.task_id == "compose/can_arrange_of_incr_list"]
    assert problem.contract is not None
    contract = aux_examples(problem.contract.docstring)
    assert contract == {">>> aux([1, 2, 3])", ">>> aux([5, 3, 5, 2, 3, 3, 9, 0, 123])"}
    for instruct in (True, False):
        book = PromptBook(ScriptedEngine({}, instruct=instruct))
        single = book.first(problem, "single").text
        assert aux_examples(single) == contract, instruct
        shown = {"helper": book.first(problem, "helper"),
                 "main (sequential)": book.first(problem, "main", "def aux(l):\n    return l\n"),
                 "main (parallel)": book.first(problem, "main", knows_helper=True),
                 "helper (contract)": book.contract_helper(problem, problem.contract),
                 "main (contract)": book.contract_main(problem, problem.contract),
                 "planner": book.planner(problem)}
        for who, prompt in shown.items():
            assert aux_examples(prompt.text) <= contract, (instruct, who)
        # Main under `contract` reads aux's docstring twice, the same text both times: in the
        # task and in the stub it calls (which is the helper's contract).
        assert contract_stub(problem.contract).count(">>> aux(") == 2
        assert shown["main (contract)"].text.count(">>> aux([1, 2, 3])") == 2


@pytest.mark.docker
def test_the_canonical_passes_its_public_examples(docker_sandbox: Sandbox) -> None:
    """The feedback between turns runs the whole's examples on the entry point; aux's
    examples, now in the prompt, are not among them, so a right program hears no failure."""
    from coopcode.schemes.base import public_check

    problems = load_compose("all")
    jobs = [public_check(p, p.prompt + (p.canonical_solution or ""), timeout=5.0) for p in problems]
    for p, verdict in zip(problems, docker_sandbox.run_many(jobs)):
        assert verdict.passed and verdict.n_tests == len(p.examples), (p.task_id, verdict.status)


# -- the parts ------------------------------------------------------------------------------

def test_types_from_annotations_and_values() -> None:
    def ann(text: str) -> Type:
        return annotation_type(ast.parse(text, mode="eval").body)

    assert ann("List[int]") == ann("list[int]") == ann("typing.List[int]") == ("list", "int")
    assert show(ann("Optional[str]")) == show(ann("str | None")) == "str | None"
    assert show(ann("Tuple[int, int]")) == "tuple[int, int]" and show(ann("list")) == "list[Any]"
    assert join("int", "float") == "float" and join(("list", "?"), ("list", "str")) == ("list", "str")
    assert join("int", "str") == "object"
    assert accepts("float", "int") and not accepts("int", "float") and not accepts("int", "bool")
    assert accepts(ann("list"), ("list", "int")) and not accepts(("list", "int"), ("list", "?"))
    assert not accepts("str", ann("Optional[str]"))


def test_renaming_and_examples_left_out() -> None:
    body = "    if n < 2:\n        return fib(n)  # fib\n    return x.fib + fib(n - 1)\n"
    assert rename_in_code(body, "fib", "aux") == \
        "    if n < 2:\n        return aux(n)  # fib\n    return x.fib + aux(n - 1)\n"
    assert rename_in_words("maximum(x) is the maximum", "maximum", "aux") == "aux(x) is the maximum"
    assert rename_in_words("Write a function vowels_count which", "vowels_count", "aux") == \
        "Write a function aux which"
    doc = "Sort it.\nFor example:\n>>> f([2, 1])\n[1, 2]\n\nf(n) -> n defines it."
    assert without_doctests(doc) == "Sort it.\n\nf(n) -> n defines it."


# -- users' files with a contract -----------------------------------------------------------

PY_PROBLEM = '''from typing import List


def aux(s: str) -> int:
    """Count the vowels in s.
    >>> aux('banana')
    3
    """
    return sum(c in "aeiou" for c in s)


def vowel_parity(s: str) -> bool:
    """Whether s has an even number of vowels: call aux.
    >>> vowel_parity('banana')
    False
    """


def check(candidate):
    assert candidate('ab') is False
    assert candidate('aa') is True


def check_aux(candidate):
    assert candidate('banana') == 3
    assert candidate('') == 0
'''


def _jsonl_record(contract: object) -> dict[str, Any]:
    return {"task_id": "mine/1", "entry_point": "double_len",
            "prompt": 'def double_len(s):\n    """Twice the length of s.\n    >>> double_len("ab")\n    4\n    """\n',
            "test": "def check(candidate):\n    assert candidate('abc') == 6\n",
            "canonical_solution": "    return 2 * aux(s)\n", "contract": contract}


GOOD_CONTRACT = {"signature": "def aux(s: str) -> int:", "docstring": "Length of s.",
                 "test": "def check(candidate):\n    assert candidate('ab') == 2\n",
                 "solution": "    return len(s)\n"}


@pytest.mark.docker
def test_users_problem_files_with_a_contract_load_and_run(tmp_path: Path,
                                                          docker_sandbox: Sandbox) -> None:
    (tmp_path / "vowel_parity.py").write_text(PY_PROBLEM)
    (py,) = load_problems(str(tmp_path / "vowel_parity.py"))
    assert py.contract is not None and "aux" not in py.prompt.split("def vowel_parity")[0]
    assert "check_aux" not in py.prompt and "check_aux" not in py.tests
    assert py.contract.signature == "def aux(s: str) -> int:"
    assert py.contract.solution == '    return sum(c in "aeiou" for c in s)\n'
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(_jsonl_record(GOOD_CONTRACT)) + "\n")
    (js,) = load_problems(str(path))
    assert js.contract is not None and js.contract.prompt.startswith("def aux(s: str) -> int:\n")
    # A problem written out by coopcode reads back the same (contract and sources included).
    again = tmp_path / "again.jsonl"
    again.write_text(json.dumps(load_compose("val")[0].to_dict()) + "\n")
    assert load_problems(str(again))[0].contract == load_compose("val")[0].contract
    # The contract's reference passes its tests in the sandbox; the whole runs on top of it.
    aux_programs = [p.contract.program for p in (py, js) if p.contract and p.contract.program]
    assert len(aux_programs) == 2
    jobs = [Job(program=program, tests=p.contract.tests, entry_point="aux")
            for program, p in zip(aux_programs, (py, js)) if p.contract]
    jobs.append(Job(program=f"{aux_programs[1]}\n\n{js.prompt}{js.canonical_solution}",
                    tests=js.tests, entry_point=js.entry_point))
    assert all(v.passed for v in docker_sandbox.run_many(jobs))


@pytest.mark.parametrize(("contract", "message"), [
    ("def aux(s): ...", "contract must be an object"),
    ({"signature": "def aux(s):", "docstring": "Doc."}, "contract lacks test"),
    ({**GOOD_CONTRACT, "signature": "def helper(s):"}, "defines helper: the helper's function is called aux"),
    ({**GOOD_CONTRACT, "signature": "def aux(s"}, "contract signature does not parse"),
    ({**GOOD_CONTRACT, "solution": "return (\n"}, "contract solution does not complete the stub"),
    ({**GOOD_CONTRACT, "entry_point": "helper"}, "the helper's function is called aux"),
    ({**GOOD_CONTRACT, "tests": "x"}, "unknown key(s) tests"),
])
def test_malformed_jsonl_contract_is_one_line(tmp_path: Path, contract: object, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(_jsonl_record(GOOD_CONTRACT)) + "\n"
                    + json.dumps(_jsonl_record(contract)) + "\n")
    with pytest.raises(ProblemError) as info:
        load_problems(str(path))
    assert str(info.value).startswith(f"{path}:2: ") and message in str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("source", "message"), [
    (PY_PROBLEM.replace("def aux(", "def aux_other("), "bad.py:24: check_aux holds aux's tests"),
    (PY_PROBLEM.replace('    """Count the vowels in s.\n    >>> aux(\'banana\')\n    3\n    """\n', ""),
     "bad.py:4: aux has no docstring"),
    (PY_PROBLEM + "\n\ndef check_aux(candidate):\n    pass\n", "check_aux is defined twice"),
])
def test_malformed_py_contract_is_one_line(tmp_path: Path, source: str, message: str) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    with pytest.raises(ProblemError) as info:
        load_problems(str(path))
    assert message in str(info.value) and "\n" not in str(info.value), str(info.value)


# -- the commands ---------------------------------------------------------------------------

def test_problems_list_and_show(tmp_path: Path) -> None:
    done = coopcode("problems", "list")
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert rows[0] == ["set", "problems", "what"]
    sizes = {row[0]: int(row[1]) for row in rows[1:]}
    assert sizes == {"humaneval:test": 40, "humaneval:train": 124, "humaneval:val": 30,
                     "humaneval:fit": 94, "humaneval:all": 164, "compose:train": 179,
                     "compose:val": 40, "compose:test": 88, "compose:all": 307}
    listed = json.loads(coopcode("problems", "list", "--json").stdout)
    assert {s["name"]: s["size"] for s in listed} == sizes

    lines = coopcode("problems", "show", "compose:val", "--json").stdout.splitlines()
    shown = [json.loads(line) for line in lines]
    assert len(shown) == 40
    first = shown[0]
    assert set(first) == {"task_id", "entry_point", "prompt", "sources", "contract",
                          "canonical_solution", "aux_solution", "n_tests", "n_examples"}
    problem: Problem = load_compose("val")[0]
    assert problem.contract is not None
    assert (first["task_id"], first["sources"], first["aux_solution"]) == \
        (problem.task_id, list(problem.sources), problem.contract.solution)
    assert first["contract"]["signature"] == problem.contract.signature
    assert first["contract"]["prompt"] == problem.contract.prompt
    assert first["n_tests"] == count_tests(problem.tests) >= 3

    humaneval = [json.loads(line) for line in
                 coopcode("problems", "show", "humaneval:val", "--json").stdout.splitlines()]
    assert len(humaneval) == 30 and all(h["contract"] is None and h["sources"] == [] for h in humaneval)
    (tmp_path / "vowel_parity.py").write_text(PY_PROBLEM)
    mine = json.loads(coopcode("problems", "show", str(tmp_path / "vowel_parity.py"), "--json").stdout)
    assert mine["contract"]["n_tests"] == 2 and mine["aux_solution"].strip().startswith("return")
    table = coopcode("problems", "show", "compose:test").stdout.splitlines()
    assert table[0].split("\t") == ["task", "entry point", "tests", "sources", "contract"]
    assert len(table) == 89 and all(line.split("\t")[4].startswith("def aux(") for line in table[1:])


def test_problems_show_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    assert_refused(coopcode("problems", "show", "compose:dev"), "unknown compose split")
    assert_refused(coopcode("problems", "show", str(tmp_path / "none.jsonl")), "no such file")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(_jsonl_record({"signature": "def f(x):", "docstring": "D",
                                             "test": "def check(candidate): pass"})) + "\n")
    assert_refused(coopcode("problems", "show", str(bad)), f"{bad}:1: contract signature defines f")
    (tmp_path / "bad.py").write_text(PY_PROBLEM.replace("def aux(", "def aux_other("))
    assert_refused(coopcode("problems", "show", str(tmp_path / "bad.py")), "check_aux holds aux's tests")
