"""No test package takes the name of a real one: pytest puts `tests/` on sys.path, so a
`tests/tui/__init__.py` made `import tui` find the tests, not the app, outside an editable
install (issue 54)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_test_package_is_named_as_a_package_of_the_project():
    project = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert {"coopcode", "tui", "sandbox"} <= project
    tests = {p.parent.name for p in (ROOT / "tests").glob("*/__init__.py")}
    assert not tests & project, f"tests/{sorted(tests & project)} shadow the project's packages"
