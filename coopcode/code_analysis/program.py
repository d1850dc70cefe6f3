"""From model output to a program: extract the code, then combine the agents' parts.

Model output is messy: fences with or without a language, prose before and after, example
calls and prints, `if __name__ == "__main__":` demos, and text cut off mid-line when the token
budget runs out. `extract_code` keeps the definitions (imports, functions, classes,
constants) and drops the rest; `combine` builds the program that runs in the sandbox.
"""

from __future__ import annotations

import ast
import re

from coopcode.code_analysis.docstrings import has_docstring
from coopcode.records.attempts import Program

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
_CODE_START = re.compile(r"^(?:def |async def |class |import |from |@|[A-Za-z_][A-Za-z_0-9]*\s*(?::[^=]+)?=[^=])")
_NON_PYTHON = {"bash", "sh", "shell", "console", "text", "txt", "json", "yaml", "output", "plaintext"}


def _fenced_blocks(text: str) -> list[str]:
    blocks = []
    for lang, body in _FENCE.findall(text):
        if lang.lower() in _NON_PYTHON:
            continue
        blocks.append(body)
    return blocks


def _drop_leading_prose(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if _CODE_START.match(line):
            return "\n".join(lines[i:])
    return text


def _parse_prefix(code: str) -> tuple[str, ast.Module | None]:
    """The longest prefix of whole lines that parses (what survives a truncated output)."""
    lines = code.splitlines()
    for end in range(len(lines), 0, -1):
        candidate = "\n".join(lines[:end])
        try:
            return candidate, ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return code, None


def _defined_names(module: ast.Module) -> set[str]:
    return {
        n.name for n in module.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _keep(node: ast.stmt, defined: set[str]) -> bool:
    """Definitions stay; example calls, prints, asserts and demo blocks go."""
    if isinstance(node, ast.Import | ast.ImportFrom | ast.FunctionDef | ast.AsyncFunctionDef
                  | ast.ClassDef):
        return True
    if isinstance(node, ast.Assign | ast.AnnAssign):
        value = node.value
        if value is None:
            return True
        # `result = solve(3)` is a stray test; `MOD = 10**9 + 7` or `VOWELS = set("aeiou")` stay.
        for sub in ast.walk(value):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in defined:
                return False
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id in {"print", "input"}:
                return False
        return True
    return False


def _first_line(node: ast.stmt) -> int:
    decorators = getattr(node, "decorator_list", [])
    return min([node.lineno] + [d.lineno for d in decorators])


def clean_code(code: str) -> str:
    """Keep the top-level definitions of `code`, in their original text."""
    parsed_text, module = _parse_prefix(code)
    if module is None:
        return code.strip("\n") + "\n" if code.strip() else ""
    defined = _defined_names(module)
    lines = parsed_text.splitlines()
    kept = [
        "\n".join(lines[_first_line(n) - 1: n.end_lineno]).rstrip()
        for n in module.body if _keep(n, defined)
    ]
    if not kept:
        return ""
    out: list[str] = []
    for i, block in enumerate(kept):
        is_import = block.startswith(("import ", "from "))
        prev_import = i > 0 and kept[i - 1].startswith(("import ", "from "))
        if i:
            out.append("\n" if is_import and prev_import else "\n\n\n")
        out.append(block)
    return "".join(out) + "\n"


def extract_code(text: str, prefix: str = "") -> str:
    """The code in one model output.

    `prefix` is code that precedes the output (completion mode: the signature and docstring
    the model continued). The result parses, unless nothing in the output does.
    """
    if prefix:
        body = text
        blocks = _fenced_blocks(text) if "```" in text else []
        if blocks and any("def " in b for b in blocks):
            return clean_code("\n\n".join(blocks))  # the model rewrote the whole function
        if prefix.rstrip().endswith(":") and re.match(r"(async[ \t]+)?def[ \t]", text):
            # After a whole pre-filled signature the model began the function again.
            return clean_code(text)
        return clean_code(prefix + body)
    if "```" in text:
        # A pre-filled fence means the output starts inside a block: close the gap by
        # treating text before the first fence as code when it looks like code.
        head, _, _ = text.partition("```")
        blocks = _fenced_blocks(text)
        if head.strip() and _CODE_START.match(head.lstrip().splitlines()[0]):
            blocks.insert(0, head)
        with_defs = [b for b in blocks if re.search(r"^\s*(async )?def |^\s*class ", b, re.M)]
        chosen = with_defs or blocks
        if chosen:
            return clean_code("\n\n".join(chosen))
    return clean_code(_drop_leading_prose(text))


def defines(code: str, name: str) -> bool:
    """Whether `code` defines a top-level function `name`."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError):
        return bool(re.search(rf"^def {re.escape(name)}\s*\(", code, re.M))
    return any(
        isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in module.body
    )


def prompt_context(prompt: str, entry_point: str) -> str:
    """The problem prompt without the entry point's stub: imports, given functions, constants."""
    try:
        module = ast.parse(prompt)
    except SyntaxError:
        return ""
    lines = prompt.splitlines()
    kept = [
        "\n".join(lines[_first_line(n) - 1: n.end_lineno])
        for n in module.body
        if not (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry_point)
    ]
    return "\n\n\n".join(k.rstrip() for k in kept if k.strip())


def combine(prompt: str, entry_point: str, helper_code: str, main_code: str) -> Program:
    """prompt context + helper code + main code, checked with `ast` (never executed here)."""
    context = prompt_context(prompt, entry_point)
    parts = [p.strip("\n") for p in (context, helper_code, main_code) if p and p.strip()]
    text = "\n\n\n".join(parts) + "\n"
    ok, err = syntax_check(text)
    return Program(text=text, context=context, helper_code=helper_code, main_code=main_code,
                   syntax_ok=ok, syntax_error=err)


def syntax_check(text: str) -> tuple[bool, str]:
    """Whether `text` parses (with `ast`, never executed here), and the error if not."""
    try:
        ast.parse(text)
    except SyntaxError as e:
        return False, f"line {e.lineno}: {e.msg}"
    except (ValueError, RecursionError, MemoryError) as e:
        return False, f"{type(e).__name__}: {e}"
    return True, ""


def code_lines(code: str) -> int:
    """Lines of code without docstrings, comments and blank lines (what an agent wrote
    itself: a docstring copied from the prompt is not code). Unparsable code: its non-blank
    lines that are not comments."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))
    for node in ast.walk(module):
        if (isinstance(node, ast.Module | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                and has_docstring(node)):
            node.body = node.body[1:] or [ast.Pass()]
    return sum(1 for line in ast.unparse(module).splitlines() if line.strip())


def answers_a_constant(code: str, entry_point: str) -> bool:
    """Whether `entry_point` in `code` answers every input with one literal: its body, past
    a docstring, is a single `return` of a literal (`return 2`, `return [3]`, `return ""`;
    not a bare `return` or `return None`). What a policy learns when the tests pay partial
    credit and a fixed guess passes some of them. Read from the syntax tree, never run."""
    try:
        module = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    defs = [n for n in module.body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == entry_point]
    if not defs:
        return False
    body = [b for b in defs[-1].body if not isinstance(b, ast.Pass)
            and not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return False
    try:
        value = ast.literal_eval(body[0].value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return value is not None
