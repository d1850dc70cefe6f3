"""The package keeps its floors: each folder of coopcode/ imports only from its own floor and
the floors below it, in the order docs/guide/layout.md draws them, and nothing outside the
installed package (tui/, scripts/, docs/ ...), so no import runs back up and makes a circle.

Every import is read from the syntax tree (nothing is imported), at any depth: a function's
deferred import, and a string naming a module outside the package (for `import_module`),
count as much as a module's. `from coopcode import __version__` is the one
import of the package root allowed inside it: any other name there loads lazily from a module
of any floor, which would hide an upward import."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "coopcode"
OUTSIDE = ("tui", "scripts", "docs", "tests", "benchmarks", "examples")
DOTTED = re.compile(rf"^({'|'.join(OUTSIDE)})(\.[A-Za-z_]\w*)+$")  # "tui.cli"


def floors() -> list[str]:
    """coopcode's folders from the top floor down, as the layout page draws them."""
    tree = (REPO / "docs" / "guide" / "layout.md").read_text().split("```")[1]
    return [m.group(1) for m in re.finditer(r"^  (\w+)/", tree, re.M)]


def imported_modules(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of each absolute import in one file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, a.name, []) for a in node.names)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and DOTTED.match(node.value)):
            out.append((node.lineno, node.value, []))  # a module named for import_module
    return out


def test_the_layout_page_names_every_folder_of_the_package() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert set(floors()) == folders


def test_no_module_imports_a_floor_above_its_own_or_outside_the_package() -> None:
    rank = {name: i for i, name in enumerate(floors())}  # 0 is the top floor
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        floor = parts[0] if len(parts) > 1 else None  # None: the package root (cli, plugins)
        where = f"{path.relative_to(REPO)}"
        for line, module, names in imported_modules(path):
            top, _, rest = module.partition(".")
            if top in OUTSIDE:
                offenders.append(f"{where}:{line}: imports {module}, outside the package")
            if top != "coopcode" or floor is None:
                continue
            target = rest.split(".")[0]
            if not target and names != ["__version__"]:
                offenders.append(f"{where}:{line}: from coopcode import {', '.join(names)} "
                                 "(import it from its own module)")
            elif target in rank and rank[target] < rank[floor]:
                offenders.append(f"{where}:{line}: {floor}/ imports {module}, a floor above")
    assert not offenders, "\n".join(offenders)


def module_imports() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports (a deferred import and
    one for the type checker alone included; `from coopcode import __version__` left out)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for _, module, names in imported_modules(path):
            if module.partition(".")[0] != "coopcode" or (module, names) == ("coopcode", ["__version__"]):
                continue
            for imported in names or [""]:  # `from a.b import c`: module a.b.c if there is one
                whole = f"{module}.{imported}" if imported else module
                targets.add(whole if whole in modules else module)
        graph[name] = (targets & modules.keys()) - {name}
    return graph


def test_no_modules_import_each_other_in_a_circle() -> None:
    """Floors keep folders apart; inside a folder two modules could still import each other,
    if only for the type checker (a Protocol's argument, a dataclass field): then neither can
    be read, moved or tested without the other. A circle found is named by its modules."""
    graph = module_imports()
    circles = []
    for start in sorted(graph):  # a depth-first walk from each module back to itself
        stack, seen = [(start, [start])], set()
        while stack:
            here, path = stack.pop()
            for there in sorted(graph[here]):
                if there == start:
                    circles.append(" -> ".join([*path, start]))
                elif there not in seen and there > start:  # each circle once, from its least module
                    seen.add(there)
                    stack.append((there, [*path, there]))
    assert not circles, "\n".join(circles)
