"""Composing two HumanEval problems into one whose work divides: the text of it.

A composition takes an inner step g and an outer step f (f takes what g returns) and writes
a new problem: entry point `<f>_of_<g>` taking g's parameters, a docstring that states both
steps (g's docstring as the contract gives it, `>>>` examples and all, renamed `aux`; f's in
words, its `>>>` examples left out), examples of the whole, tests of the whole, a canonical
solution, and the contract for the helper: g's signature and docstring with g's name
replaced by `aux`, g's tests, g's canonical body.

Every scheme is shown the same statement of the task, so that comparing schemes compares the
schemes, not what they were told: aux's part in the prompt is the contract's docstring word
for word, so a single agent reads what the helper's contract and main's stub show, aux's
examples included (HumanEval's own statement of the inner step, which a small model leans
on). f's examples stay out for everyone: they call f on f's own inputs, not on the
whole's; the whole's examples are shown instead, and they alone are the public examples
(`aux(...)` lines are not calls of the entry point, so `coopcode.problems.examples` never
turns them into tests of it).

Pure text and `ast`: nothing here runs dataset code. The values (what g returns, what the
whole returns) come from the sandbox (scripts/compose_build.py).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Any

from coopcode.code_analysis.docstrings import has_docstring
from coopcode.problems.contract import AUX, Contract, docstring_block, raw_docstring
from coopcode.problems.problem import Problem
from coopcode.problems.value_types import Type, annotation_type, join_all, refine, value_type

# An example line shown in a docstring: short enough to read, one line.
EXAMPLE_CHARS = 70


@dataclass(frozen=True)
class Source:
    """One HumanEval problem, read for composing: its signature, words, code and inputs."""

    task_id: str
    prompt: str
    name: str
    params: str  # the parameter list as written: "numbers: List[int], delimeter: int"
    param_names: tuple[str, ...]
    required: int  # parameters without a default
    param_types: tuple[Type, ...]  # declared, unknown parts filled from the tests' arguments
    returns: str | None  # the return annotation as written
    declared_return: Type
    imports: tuple[str, ...]  # the prompt's import lines
    doc: str  # the docstring as written between the quotes (escapes kept), dedented
    body: str  # the canonical solution: a body completing the prompt
    tests: str  # HumanEval's test source
    inputs: tuple[tuple[Any, ...], ...]  # literal arguments: the examples' first, then the tests'
    n_example_inputs: int  # how many of `inputs` the docstring's examples give


def read_source(problem: Problem) -> Source | None:
    """`problem` as a Source; None when it cannot be composed: its prompt holds more than
    imports and one documented function (given helpers, constants), or it has no solution."""
    if problem.canonical_solution is None:
        return None
    module = ast.parse(problem.prompt)
    imports = [n for n in module.body if isinstance(n, ast.Import | ast.ImportFrom)]
    functions = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    if len(imports) + len(functions) != len(module.body) or len(functions) != 1:
        return None
    fn = functions[0]
    if fn.name != problem.entry_point or not has_docstring(fn):
        return None
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.posonlyargs:
        return None
    example_inputs = literal_calls("\n".join(problem.examples))
    inputs = [key.args for key in dict.fromkeys(example_inputs + literal_calls(problem.tests))]
    n_examples = len(dict.fromkeys(example_inputs))
    names = tuple(a.arg for a in fn.args.args)
    observed = [join_all(value_type(args[i]) for args in inputs if len(args) > i)
                for i in range(len(names))]
    return Source(
        task_id=problem.task_id, prompt=problem.prompt, name=fn.name, params=ast.unparse(fn.args), param_names=names,
        required=len(names) - len(fn.args.defaults),
        param_types=tuple(refine(annotation_type(a.annotation), o)
                          for a, o in zip(fn.args.args, observed)),
        returns=ast.unparse(fn.returns) if fn.returns else None,
        declared_return=annotation_type(fn.returns),
        imports=tuple(ast.unparse(n) for n in imports),
        doc=raw_docstring(problem.prompt, fn), body=problem.canonical_solution, tests=problem.tests,
        inputs=tuple(inputs), n_example_inputs=n_examples,
    )


class _Key:
    """Arguments compared by their repr (1 and True, or 1 and 1.0, are different inputs)."""

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args, self.key = args, repr(args)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def literal_calls(test_source: str) -> list[_Key]:
    """The argument tuples of the `candidate(...)` calls in test source whose arguments are
    all literals (others, built by code, are left out), in order."""
    try:
        tree = ast.parse(test_source)
    except SyntaxError:
        return []
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id == "candidate" and not n.keywords]
    found = []
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset)):
        try:
            found.append(_Key(tuple(ast.literal_eval(a) for a in call.args)))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return found


# -- names ---------------------------------------------------------------------------------

def snake(name: str) -> str:
    """digitSum -> digit_sum, Strongest_Extension -> strongest_extension."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def composed_name(inner: Source, outer: Source) -> str:
    """What the whole does, from both steps' names: `is_prime_of_strlen`."""
    return f"{snake(outer.name)}_of_{snake(inner.name)}"


def rename_in_code(body: str, old: str, new: str) -> str:
    """`body` with the name `old` (not attributes such as `x.old`) written as `new`."""
    source = "def _():\n" + body
    spots = []
    previous = ""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string == old and previous != ".":
            spots.append(tok.start)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            previous = tok.string
    lines = source.splitlines(keepends=True)
    for row, col in reversed(spots):
        lines[row - 1] = lines[row - 1][:col] + new + lines[row - 1][col + len(old):]
    return "".join(lines[1:])


def rename_in_words(text: str, old: str, new: str) -> str:
    """`text` with the function `old` called `new`: where it is called (`old(`), named as a
    function (`function old`), and, for names no sentence uses (with `_`, a digit or a
    capital: `vowels_count`, `fib4`), wherever it stands as a word."""
    word = re.escape(old)
    text = re.sub(rf"(?<![\w.]){word}(?=\s*\()", new, text)
    text = re.sub(rf"(?<=function ){word}\b", new, text)
    if re.search(r"[_0-9A-Z]", old):
        text = re.sub(rf"(?<![\w.]){word}\b", new, text)
    return text


# -- words ---------------------------------------------------------------------------------

def without_doctests(text: str) -> str:
    """`text` without its `>>>` examples (each with its output lines) and without a line that
    only introduced them (`Examples:`, `For example:`, `It must be implemented like this:`)."""
    lines = text.splitlines()
    keep = [True] * len(lines)
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith(">>>"):
            j = i
            while j < len(lines) and lines[j].strip() and (
                    j == i or not lines[j].strip().startswith(">>>")):
                keep[j] = False
                j += 1
            i = j
        else:
            i += 1
    kept_before = [k for k in range(len(lines)) if keep[k]]
    for k in kept_before:
        nxt = next((m for m in range(k + 1, len(lines)) if lines[m].strip()), None)
        intro = lines[k].strip().endswith(":") or re.fullmatch(
            r"(for\s+)?exampl?es?\s*\d*\s*:?", lines[k].strip(), re.I)
        if intro and (nxt is None or not keep[nxt]):
            keep[k] = False
    out: list[str] = []
    for line, k in zip(lines, keep):
        if k and not (not line.strip() and (not out or not out[-1].strip())):
            out.append(line.rstrip())
    return "\n".join(out).strip("\n")


def _indented(text: str, indent: str = "    ") -> str:
    return "\n".join(f"{indent}{line}".rstrip() for line in text.splitlines())


def _call(name: str, args: tuple[Any, ...]) -> str:
    return f"{name}({', '.join(repr(a) for a in args)})"


# -- the composed problem ------------------------------------------------------------------

@dataclass(frozen=True)
class Composition:
    """g then f, with the inputs kept and the whole's values on them (from the sandbox)."""

    inner: Source
    outer: Source
    name: str
    cases: tuple[tuple[tuple[Any, ...], Any], ...]  # (arguments, expected value of the whole)
    n_examples: int  # the first cases that are shown as examples in the docstring

    @property
    def imports(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.inner.imports + self.outer.imports))

    def prompt(self) -> str:
        """Imports, the signature (g's parameters, f's return annotation) and the docstring:
        aux's contract docstring (examples kept), f's words (examples left out), then the
        whole's examples."""
        inner, outer = self.inner, self.outer
        aux_call = f"{AUX}({', '.join(inner.param_names)})"
        param = outer.param_names[0]
        head = (f"Return {outer.name}({aux_call}): two steps, the second on the first's "
                f"result.\n\n{aux_call}:\n{_indented(contract_of(inner).docstring)}\n\n"
                f"{outer.name}({param}), with {param} = {aux_call}:\n"
                f"{_indented(without_doctests(outer.doc))}")
        shown = [f">>> {_call(self.name, args)}\n{repr(value)}"
                 for args, value in self.cases[:self.n_examples]]
        doc = head + ("\n\n" + "\n".join(shown) if shown else "")
        returns = f" -> {outer.returns}" if outer.returns else ""
        imports = "\n".join(self.imports) + "\n\n\n" if self.imports else ""
        return f"{imports}def {self.name}({inner.params}){returns}:\n{docstring_block(doc, '    ')}"

    def canonical_solution(self) -> str:
        """A body completing the prompt: g's canonical as a nested `aux`, f's canonical
        under its own name, and the one line that composes them."""
        inner, outer = self.inner, self.outer
        g_returns = f" -> {inner.returns}" if inner.returns else ""
        f_returns = f" -> {outer.returns}" if outer.returns else ""
        return (f"    def {AUX}({inner.params}){g_returns}:\n"
                f"{_indented(rename_in_code(inner.body, inner.name, AUX).rstrip())}\n"
                f"    def {outer.name}({outer.params}){f_returns}:\n"
                f"{_indented(outer.body.rstrip())}\n"
                f"    return {outer.name}({AUX}({', '.join(inner.param_names)}))\n")

    def tests(self) -> str:
        """`def check(candidate)`: one assert per case; a float compared within 1e-6, as
        HumanEval compares floats."""
        lines = []
        for args, value in self.cases:
            call = _call("candidate", args)
            if isinstance(value, float):
                lines.append(f"    assert abs({call} - {repr(value)}) < 1e-6")
            else:
                lines.append(f"    assert {call} == {repr(value)}")
        return "def check(candidate):\n" + "\n".join(lines) + "\n"

    def contract(self) -> Contract:
        """The inner step's contract (`contract_of`)."""
        return contract_of(self.inner)


def contract_of(inner: Source) -> Contract:
    """g's signature and docstring, renamed aux; g's tests; g's canonical body, renamed."""
    returns = f" -> {inner.returns}" if inner.returns else ""
    return Contract(signature=f"def {AUX}({inner.params}){returns}:",
                    docstring=rename_in_words(inner.doc, inner.name, AUX),
                    tests=inner.tests, imports="\n".join(inner.imports),
                    solution=rename_in_code(inner.body, inner.name, AUX))


def example_fits(args: tuple[Any, ...], value: Any, name: str) -> bool:
    """Whether a case reads well as a docstring example: short, without a backslash (in a
    docstring `'a\\nb'` would read back as two lines), and without a float that is not
    short (an example is compared exactly: 1.8399999999999999 fails a solution that sums
    in another order, while the hidden tests allow 1e-6)."""
    call, shown = _call(name, args), repr(value)
    return len(call) <= EXAMPLE_CHARS and len(shown) <= EXAMPLE_CHARS \
        and not any(c in call + shown for c in "\\\n") and _short_floats(value)


def _short_floats(value: Any) -> bool:
    if isinstance(value, float):
        return value == round(value, 6)
    if isinstance(value, list | tuple):
        return all(_short_floats(v) for v in value)
    if isinstance(value, dict):
        return all(_short_floats(v) for v in value.values())
    return True
