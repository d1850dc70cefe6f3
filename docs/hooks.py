"""MkDocs hooks: the pages and pictures made from the code at every `make docs`, so that none
of them can drift from it.

- `reference/cli.md`: typer's own docs output for the `coopcode` app (every command, its
  arguments and options, as `--help` gives them);
- `reference/api.md`: one mkdocstrings entry per name `coopcode` exports (`coopcode.__all__`),
  grouped as `coopcode/__init__.py` groups them;
- `screens/*.svg`: the TUI's screens, saved by the running app itself (`docs/screenshots.py`:
  scripted agents, the process sandbox; ~15 s), and each screen's keys as its `?` overlay
  lists them, put in the TUI page where it says `<!-- keys: SCREEN -->`.

Nothing is written into docs/: the generated files exist only in the build (`site/`).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent


def cli_page() -> str:
    """The command reference: `typer coopcode.cli utils docs`, run as its own process so the
    app is built exactly as the `coopcode` command builds it."""
    done = subprocess.run([sys.executable, "-m", "typer", "coopcode.cli", "utils", "docs",
                           "--name", "coopcode"], capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0 or not done.stdout.startswith("# "):
        raise RuntimeError(f"typer could not document coopcode.cli:\n{done.stderr[-2000:]}")
    body = done.stdout.split("\n", 1)[1]
    return ("# Command reference\n\n"
            "Every command with its arguments and options, written at each build from the "
            "commands themselves (typer's own docs output), so it says what `--help` says. "
            "The guide explains them: [solving and benching](../guide/solve-and-bench.md), "
            "[training](../guide/training.md), [the TUI](../guide/tui.md).\n" + body)


# `"name": "module"` pairs of coopcode/__init__.py's _LAZY table, and the `# group` comments
# between them.
_ENTRY = re.compile(r'"(\w+)":\s*"([\w.]+)"')
_GROUP = re.compile(r"^\s*#\s*(.+)$")


def api_groups() -> list[tuple[str, list[tuple[str, str]]]]:
    """The exported names as `coopcode/__init__.py` groups them: (group, [(name, module)])."""
    source = (REPO / "coopcode" / "__init__.py").read_text(encoding="utf-8")
    table = source[source.index("_LAZY = {"):]
    table = table[:table.index("\n}\n")]
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    for line in table.splitlines()[1:]:
        comment = _GROUP.match(line)
        if comment:
            groups.append((comment.group(1).strip(), []))
            continue
        for name, module in _ENTRY.findall(line):
            if not groups:
                groups.append(("the rest", []))
            groups[-1][1].append((name, module))
    return [(title, names) for title, names in groups if names]


def api_page() -> str:
    """One mkdocstrings entry per exported name, from its docstring."""
    import coopcode

    parts = ["# Python API\n",
             "What `import coopcode` gives, written at each build from the docstrings "
             "(mkdocstrings). Every name below is importable as `from coopcode import NAME`; "
             "the heading gives the module that defines it. How the pieces fit: "
             "[the Python API guide](../guide/python.md); adding your own: "
             "[extending](../guide/extending.md).\n"]
    listed = set()
    for title, names in api_groups():
        parts.append(f"## {title[0].upper()}{title[1:]}\n")
        for name, module in names:
            parts.append(f"::: {module}.{name}\n")
            listed.add(name)
    missing = sorted(set(coopcode.__all__) - listed)
    if missing:
        raise RuntimeError(f"coopcode exports names the API page does not list: {missing}")
    return "\n".join(parts)


def screenshots() -> tuple[dict[str, bytes], dict[str, list[list[str]]]]:
    """The TUI's screens as SVG, saved by the running app (docs/screenshots.py), and each
    screen's keys: ({file name: svg}, {screen: [[keys, what they do, where], ...]})."""
    spec = importlib.util.spec_from_file_location("coopcode_docs_screenshots",
                                                  DOCS / "screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as tmp:
        written = asyncio.run(module.render(Path(tmp), tour=True))
        keys = json.loads((Path(tmp) / "keys.json").read_text(encoding="utf-8"))
        return {path.name: path.read_bytes() for path in written}, keys


def keys_table(rows: list[list[str]]) -> str:
    """A screen's keys as a Markdown table."""
    lines = ["| key | what it does | where |", "|---|---|---|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


_KEYS: dict[str, list[list[str]]] = {}
_MARKER = re.compile(r"<!-- keys: (\w+) -->")


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    files.append(File.generated(config, "reference/api.md", content=api_page()))
    svgs, keys = screenshots()
    for name, svg in svgs.items():
        files.append(File.generated(config, f"screens/{name}", content=svg))
    _KEYS.clear()
    _KEYS.update(keys)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    def table(found: re.Match[str]) -> str:
        if found.group(1) not in _KEYS:
            raise RuntimeError(f"{page.file.src_uri}: no screen {found.group(1)!r} "
                               f"(the TUI has {', '.join(_KEYS)})")
        return keys_table(_KEYS[found.group(1)])

    return _MARKER.sub(table, markdown)
