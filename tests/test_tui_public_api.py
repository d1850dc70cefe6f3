"""The TUI uses coopcode only through its public API (`coopcode.__all__`), never its modules.

Every .py file under tui/ is parsed (nothing is imported): an `import coopcode.x`, a
`from coopcode.x import y` (at any depth: module level, in a function, under `if`), a
`from coopcode import y` of a name the package does not export, a star import, an attribute
of the `coopcode` module that is not exported, and an `import_module("coopcode.x")` are each
an offender, listed with its file and line. The sandbox package is reached the same way
(`coopcode` exports `open_sandbox`, `Job`, `Verdict`, `SandboxUnavailable`): importing
`sandbox` itself is an offender too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import coopcode

TUI = Path(__file__).resolve().parent.parent / "tui"


def _is_coopcode_module(name: str) -> bool:
    return name == "coopcode" or name.startswith("coopcode.")


def _is_sandbox_module(name: str) -> bool:
    return name == "sandbox" or name.startswith("sandbox.")


def coopcode_uses(source: str, public: set[str]) -> tuple[list[tuple[int, str]], set[str]]:
    """(offenders as (line, what), the public names imported) of one module's source."""
    tree = ast.parse(source)
    offenders: list[tuple[int, str]] = []
    imported: set[str] = set()
    aliases: set[str] = set()  # names bound to the `coopcode` package itself
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "coopcode":
                    aliases.add(alias.asname or "coopcode")
                elif _is_coopcode_module(alias.name) or _is_sandbox_module(alias.name):
                    offenders.append((node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module != "coopcode":
                if _is_coopcode_module(node.module) or _is_sandbox_module(node.module):
                    names = ", ".join(a.name for a in node.names)
                    offenders.append((node.lineno, f"from {node.module} import {names}"))
                continue
            for alias in node.names:
                if alias.name not in public:
                    offenders.append((node.lineno, f"from coopcode import {alias.name} "
                                                   "(not in coopcode.__all__)"))
                else:
                    imported.add(alias.name)
        elif isinstance(node, ast.Call) and node.args:
            func, first = node.func, node.args[0]
            called = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            if (called in ("import_module", "__import__") and isinstance(first, ast.Constant)
                    and isinstance(first.value, str) and first.value != "coopcode"
                    and (_is_coopcode_module(first.value) or _is_sandbox_module(first.value))):
                offenders.append((node.lineno, f"{called}({first.value!r})"))
    for node in ast.walk(tree):  # `coopcode.x` where x is not exported
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases):
            if node.attr in public:
                imported.add(node.attr)
            elif not node.attr.startswith("__"):  # __version__, __all__
                offenders.append((node.lineno, f"{node.value.id}.{node.attr} "
                                               "(not in coopcode.__all__)"))
    return offenders, imported


def test_the_check_finds_every_kind_of_reaching_in() -> None:
    source = (
        "import coopcode.core.events\n"
        "import coopcode as c\n"
        "from coopcode.schemes import SCHEMES\n"
        "from coopcode import solve, _LAZY, UserError\n"
        "from coopcode import *\n"
        "from . import sibling\n"
        "from sandbox import SandboxUnavailable\n"
        "def f():\n"
        "    if True:\n"
        "        from coopcode.problems import load_humaneval\n"
        "    import importlib\n"
        "    importlib.import_module('coopcode.training.run')\n"
        "    return c.solve, c.core, c.__version__\n"
    )
    offenders, imported = coopcode_uses(source, set(coopcode.__all__))
    assert sorted(line for line, _what in offenders) == [1, 3, 4, 5, 7, 10, 12, 13]
    assert "from coopcode import _LAZY (not in coopcode.__all__)" in [w for _l, w in offenders]
    assert "c.core (not in coopcode.__all__)" in [w for _l, w in offenders]
    assert imported == {"solve", "UserError"}


def test_the_tui_imports_nothing_of_coopcode_but_its_public_api() -> None:
    public = set(coopcode.__all__)
    files = sorted(TUI.rglob("*.py"))
    assert len(files) > 10, f"no TUI sources found under {TUI}"
    offenders: list[str] = []
    used: set[str] = set()
    for path in files:
        found, imported = coopcode_uses(path.read_text(encoding="utf-8"), public)
        offenders += [f"{path.relative_to(TUI.parent)}:{line}: {what}" for line, what in found]
        used |= imported
    assert not offenders, ("the TUI reaches into coopcode's modules; import these from "
                           "`coopcode` (add what is missing to coopcode/__init__.py's _LAZY):\n"
                           + "\n".join(offenders))
    # The TUI does use the core: solve and its events, the bench's and train's configs.
    assert {"solve", "judge", "SolveConfig", "BenchConfig", "TrainConfig", "TokenDelta"} <= used
    unresolved = []
    for name in sorted(used):
        try:
            getattr(coopcode, name)
        except (AttributeError, ImportError) as e:
            unresolved.append(f"{name}: {e}")
    assert not unresolved, f"exported but not resolving: {unresolved}"
