"""The public Python API: every exported name resolves, importing it loads no torch, and the
docs' "From Python" script (docs/guide/python.md) runs as written (on the tiny model, a smaller budget)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_every_exported_name_resolves_and_import_stays_light() -> None:
    code = ("import sys, coopcode\n"
            "assert 'torch' not in sys.modules\n"
            "missing = [n for n in coopcode.__all__ if getattr(coopcode, n, None) is None]\n"
            "print(len(coopcode.__all__), missing)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    count, missing = done.stdout.split(" ", 1)
    assert int(count) >= 30 and missing.strip() == "[]"


def test_type_checkers_see_every_exported_name_from_the_module_that_gives_it() -> None:
    # The names load lazily (a module __getattr__), which a type checker reads as Any: the
    # `if _TYPE_CHECKING:` imports give it the real types, and must follow `_LAZY`.
    import coopcode

    tree = ast.parse((REPO / "coopcode" / "__init__.py").read_text())
    seen: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "_TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module
                seen.update({alias.name: item.module for alias in item.names})
    assert seen == coopcode._LAZY


def test_every_exported_name_is_its_modules_object_whatever_was_imported_first() -> None:
    # No subpackage of coopcode is named like an exported function (the training package is
    # `coopcode.training`, the function `train`), so importing it cannot shadow the function:
    # everything is imported first, then each name is asked for.
    code = ("import coopcode, importlib\n"
            "for module in set(coopcode._LAZY.values()):\n"
            "    importlib.import_module(module)\n"
            "from coopcode import SolveConfig, solve, TrainConfig, train\n"
            "wrong = [n for n in coopcode.__all__ if getattr(coopcode, n) is not\n"
            "         getattr(importlib.import_module(coopcode._LAZY[n]), n)]\n"
            "print(wrong, callable(solve), callable(train))\n"
            "try:\n"
            "    train()\n"
            "except TypeError as e:\n"
            "    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    wrong, called = done.stdout.splitlines()
    assert wrong == "[] True True"  # every name is its module's object
    assert "train() missing 2 required positional arguments: 'config' and 'out'" in called


def test_the_docs_script_benches_two_schemes(tmp_path: Path, tiny_model_dir: Path) -> None:
    page = (REPO / "docs" / "guide" / "python.md").read_text()
    script = re.search(r"# From Python.*?```python\n(.*?)```", page, re.S)
    assert script is not None, "docs/guide/python.md has no script"
    code = script.group(1)
    for old, new in (("load_engine()", f"load_engine({str(tiny_model_dir)!r}, dtype='float32')"),
                     ("max_new_tokens=256", "max_new_tokens=12"),
                     ("open_sandbox()", "open_sandbox('process')")):
        assert old in code
        code = code.replace(old, new)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["single", "sequential"]
    assert (tmp_path / "runs" / "from-python" / "summary.json").exists()
