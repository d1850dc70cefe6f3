"""Split HumanEval-style test source into ordered steps, one record per test case.

Pure `ast`: nothing here executes code. Rules:
- Module-level statements run in order: ones that contain an `assert` anywhere are test
  cases, the rest (imports, METADATA, helpers, constants) are setup.
- `def check(candidate)` is not a step; its body runs where the first top-level
  `check(NAME)` call stands (HumanEval's harness appends that call), else at the end. In the
  body, each top-level statement containing an `assert` is a case, the others setup.
- A top-level `check(NAME)` call is dropped (we bind the candidate ourselves) and gives the
  entry point; an `if __name__ == "__main__":` block is read as module-level statements.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
import threading
from dataclasses import dataclass
from functools import lru_cache

CASE = "case"
SETUP = "setup"


class TestSourceError(ValueError):
    """The tests themselves do not parse."""

    __test__ = False  # not a pytest test class, despite the name


@dataclass(frozen=True)
class TestStep:
    __test__ = False  # not a pytest test class, despite the name

    kind: str  # CASE or SETUP
    source: str
    line: int
    in_check: bool = False  # from the body of `def check` (python3 runs it one frame deeper)

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "source": self.source, "line": self.line,
                "in_check": self.in_check}


@dataclass(frozen=True)
class SplitTests:
    steps: tuple[TestStep, ...]
    param: str  # the name the candidate is bound to, e.g. "candidate"
    entry_point: str | None  # from a trailing `check(NAME)`
    names: tuple[str, ...]  # free names of the tests that the program may define
    # What the tests' module code does to the names the program sees in python3's single
    # file (program first, then the tests): their imports, and every other name they bind.
    imports: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()

    @property
    def cases(self) -> tuple[TestStep, ...]:
        return tuple(s for s in self.steps if s.kind == CASE)


# CPython 3.11 before 3.11.8 can fail `ast.parse` with "AST constructor recursion depth
# mismatch" when threads parse at once (gh-106905); run_many splits from several threads.
_PARSE_LOCK = threading.Lock()


def _parse(source: str) -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source)


@lru_cache(maxsize=1024)  # G samples of one problem share its tests
def split_tests(source: str) -> SplitTests:
    try:
        tree = _parse(source)
    except SyntaxError as e:
        raise TestSourceError(f"the tests do not parse: {e}") from None
    body = _flatten_main(tree.body)
    check = next((s for s in reversed(body)
                  if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "check"),
                 None)
    entry: str | None = None
    steps: list[TestStep] = []
    check_placed = False
    for stmt in body:
        if _is_check_def(stmt):
            continue
        call_arg = _check_call_arg(stmt)
        if call_arg is not None:
            entry = entry or (call_arg or None)
            if check is not None and not check_placed:
                steps.extend(_check_steps(source, check))
                check_placed = True
            continue
        steps.append(_step(source, stmt))
    if check is not None and not check_placed:
        steps.extend(_check_steps(source, check))
    param = "candidate"
    if isinstance(check, ast.FunctionDef) and check.args.args:
        param = check.args.args[0].arg
    imports, bound = _module_bindings(source, body)
    return SplitTests(tuple(steps), param, entry, _free_names(tree, param), imports, bound)


def split_solution_file(source: str) -> tuple[str, str, str | None]:
    """Split a file holding a solution and its tests into (program, tests, entry point).

    The program keeps every statement that is not a test (test lines become blank, so line
    numbers in errors still match the file); the tests get the file's imports plus `def
    check`, `check(...)` calls, top-level asserts and `if __name__ == "__main__":` blocks.
    """
    try:
        tree = _parse(source)
    except SyntaxError:
        return source, "", None  # the verdict will say syntax_error
    lines = source.splitlines(keepends=True)
    test_parts: list[str] = []
    drop: set[int] = set()
    entry = None
    for stmt in tree.body:
        is_test = (_is_check_def(stmt) or _check_call_arg(stmt) is not None
                   or _is_main_guard(stmt) or (_has_assert(stmt) and not _is_def(stmt)))
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            test_parts.append(_segment(source, stmt))
        elif is_test:
            test_parts.append(_segment(source, stmt))
            start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            drop.update(range(start, (stmt.end_lineno or stmt.lineno) + 1))
            entry = entry or _check_call_arg(stmt) or None
    program = "".join("\n" if i + 1 in drop else line for i, line in enumerate(lines))
    return program, "\n".join(test_parts) + "\n", entry


# ---------------------------------------------------------------- helpers


def _flatten_main(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if _is_main_guard(stmt):
            assert isinstance(stmt, ast.If)
            out.extend(_flatten_main(stmt.body))
        else:
            out.append(stmt)
    return out


def _is_main_guard(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or stmt.orelse:
        return False
    t = stmt.test
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name)
            and t.left.id == "__name__" and len(t.comparators) == 1
            and isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value == "__main__")


def _is_check_def(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == "check"


def _is_def(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))


def _check_call_arg(stmt: ast.stmt) -> str | None:
    """For a top-level `check(X)` statement: X's name ('' when not a plain name); else None."""
    if (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "check"):
        args = stmt.value.args
        return args[0].id if args and isinstance(args[0], ast.Name) else ""
    return None


def _has_assert(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Assert) for n in ast.walk(node))


def _step(source: str, stmt: ast.stmt) -> TestStep:
    kind = CASE if _has_assert(stmt) and not _is_def(stmt) else SETUP
    return TestStep(kind, _segment(source, stmt), stmt.lineno)


def _check_steps(source: str, check: ast.FunctionDef | ast.AsyncFunctionDef) -> list[TestStep]:
    body = list(check.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # docstring
    steps = []
    for stmt in body:
        if isinstance(stmt, ast.Return):
            break  # the body runs at module level, where `return` cannot stand
        step = _step(source, stmt)
        steps.append(TestStep(step.kind, step.source, step.line, in_check=True))
    return steps


def _module_bindings(source: str, body: list[ast.stmt]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tests' module-level imports (their source) and the other names their module-level
    code binds (`check`, `METADATA`, helpers), in order, each once."""
    imports: list[str] = []
    bound: dict[str, None] = {}
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(_segment(source, stmt))
            continue
        for node in _module_level_nodes(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound[node.name] = None
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound[node.id] = None
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                imports.append(_segment(source, node))
    return tuple(imports), tuple(bound)


def _module_level_nodes(stmt: ast.stmt) -> list[ast.AST]:
    """The nodes of a module-level statement that bind module-level names: not inside a
    function, class body or comprehension (their names are their own)."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue  # a definition binds its name; its body is its own scope
        todo.extend(ast.iter_child_nodes(node))
    return out


def _segment(source: str, stmt: ast.stmt) -> str:
    """The statement's own source text, dedented; ast.unparse when that text won't compile
    on its own (decorators, a multi-line string that defeats dedent)."""
    text = ast.get_source_segment(source, stmt, padded=True)
    if text is not None and not getattr(stmt, "decorator_list", None):
        text = textwrap.dedent(text)
        try:
            compile(text, "<tests>", "exec", dont_inherit=True)
            return text
        except SyntaxError:
            pass
    return ast.unparse(stmt)


def _free_names(tree: ast.Module, param: str) -> tuple[str, ...]:
    loaded: set[str] = set()
    bound: set[str] = {param, "check"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
    return tuple(sorted(loaded - bound - set(dir(builtins))))
