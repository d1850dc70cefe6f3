"""The docs' "Extending coopcode" example (docs/guide/extending.md) runs as written: a reward, a scheme and an engine
registered from a user's script, then a problem solved with all three (the engine's text is
scripted, and still runs only in the sandbox)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_docs_extension_example_registers_and_uses_a_reward_a_scheme_and_an_engine(
        tmp_path: Path) -> None:
    page = (REPO / "docs" / "guide" / "extending.md").read_text()
    found = re.search(r"# Extending coopcode.*?```python\n(.*?)```", page, re.S)
    assert found is not None, "docs/guide/extending.md has no example"
    imported = re.findall(r"^(?:from|import) (\S+)", found.group(1), re.M)
    assert set(imported) == {"dataclasses", "coopcode"}, imported  # only from coopcode itself
    done = subprocess.run([sys.executable, "-c", found.group(1)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    passed, reward, terms = done.stdout.strip().split(" ", 2)
    assert (passed, reward) == ("True", "short")  # the blind pair passed, scored by `short`
    assert terms.startswith("{'tests': 1.0, 'brevity': -0.00")
