"""Code extraction on real, messy model outputs, and combining the agents' code."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from coopcode.code_analysis.program import (
    answers_a_constant,
    combine,
    defines,
    extract_code,
    prompt_context,
)
from coopcode.problems import load_humaneval

FIXTURES = Path(__file__).parent / "fixtures" / "model_outputs.jsonl"
OUTPUTS = [json.loads(line) for line in FIXTURES.read_text().splitlines()]
PROBLEMS = {p.task_id: p for p in load_humaneval("all")}


def _top_level_calls(code: str) -> list[str]:
    module = ast.parse(code)
    return [ast.unparse(n) for n in module.body if not isinstance(
        n, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.ClassDef | ast.Assign)]


@pytest.mark.parametrize("record", OUTPUTS, ids=[f"{r['task_id']}-{r['kind']}" for r in OUTPUTS])
def test_real_outputs_extract_to_clean_definitions(record: dict) -> None:
    """Outputs of the embedded model (collected once, stored as fixtures): prose, fences,
    example prints and token-budget truncation must all be stripped."""
    code = extract_code(record["text"])
    ast.parse(code)  # always parses
    assert "```" not in code
    assert _top_level_calls(code) == []  # no prints, asserts or example calls survive
    assert "print(" not in code.split("def ")[0]
    expected = "aux" if record["kind"].startswith("helper") else PROBLEMS[record["task_id"]].entry_point
    assert defines(code, expected), code
    # Prose sentences never survive.
    assert "Here's how" not in code and "### Explanation" not in code


def test_prose_fences_and_demo_block() -> None:
    text = '''Sure! Here is the solution:

```python
import math

def area(r):
    return math.pi * r ** 2

if __name__ == "__main__":
    print(area(2))
```

```bash
python area.py
```
It prints the area.'''
    code = extract_code(text)
    assert code == "import math\n\n\ndef area(r):\n    return math.pi * r ** 2\n"


def test_prefilled_fence_output_ends_at_the_closing_fence() -> None:
    # With the fence pre-filled, the output starts inside the block.
    text = "def f(x):\n    return x + 1\n```\n\nThis adds one. ```python\nprint(f(1))\n```"
    assert extract_code(text) == "def f(x):\n    return x + 1\n"


def test_truncated_output_keeps_what_parses() -> None:
    text = "def g(a, b):\n    return a * b\n\n\ndef h(xs):\n    total = 0\n    for x in xs:\n        total += g(x,"
    code = extract_code(text)
    ast.parse(code)
    assert defines(code, "g")
    assert "total += g(x," not in code


def test_stray_tests_and_constants() -> None:
    text = ("MOD = 10 ** 9 + 7\nVOWELS = set('aeiou')\n\ndef f(x):\n    return x % MOD\n\n"
            "result = f(3)\nassert f(1) == 1\nfor i in range(3):\n    print(f(i))\n")
    code = extract_code(text)
    assert "MOD = 10 ** 9 + 7" in code and "VOWELS" in code
    assert "result =" not in code and "assert" not in code and "print" not in code


def test_completion_mode_body_joins_the_signature() -> None:
    prompt = 'def inc(x):\n    """Add one."""\n'
    assert extract_code("    return x + 1\n\nprint(inc(1))", prefix=prompt) == \
        'def inc(x):\n    """Add one."""\n    return x + 1\n'


def test_nothing_parsable_is_returned_as_is() -> None:
    assert extract_code("this is not code at all (") == "this is not code at all (\n"


def test_combine_keeps_the_prompt_context_and_checks_syntax() -> None:
    p = PROBLEMS["HumanEval/32"]  # the prompt defines poly(), which tests and main need
    context = prompt_context(p.prompt, p.entry_point)
    assert "def poly" in context and "import math" in context and "def find_zero" not in context
    program = combine(p.prompt, p.entry_point, "def aux(xs):\n    return xs\n",
                      "def find_zero(xs):\n    return 0.0\n")
    assert program.syntax_ok
    assert program.text.index("def poly") < program.text.index("def aux") < program.text.index("def find_zero")
    broken = combine(p.prompt, p.entry_point, "def aux(:\n", "def find_zero(xs):\n    return 0\n")
    assert not broken.syntax_ok and broken.syntax_error.startswith("line ")


@pytest.mark.parametrize(("code", "constant"), [
    ("def f(x):\n    return 2\n", True),
    ('def f(x):\n    """Doc."""\n    return [3, "a"]\n', True),
    ("def f(x):\n    return -1.5\n", True),
    ("def f(x):\n    return ()\n", True),
    ("def f(x):\n    return None\n", False),  # no answer at all, not a guess
    ("def f(x):\n    return\n", False),
    ("def f(x):\n    return x\n", False),
    ("def f(x):\n    return aux(x)\n", False),
    ("def f(x):\n    y = 2\n    return y\n", False),
    ("def f(x):\n    return [2] * len(x)\n", False),
    ("def g(x):\n    return 2\n", False),  # not the entry point
    ("def f(x)\n    return 2\n", False),  # does not parse
])
def test_a_function_that_answers_with_one_literal_is_found(code: str, constant: bool) -> None:
    assert answers_a_constant(code, "f") is constant
