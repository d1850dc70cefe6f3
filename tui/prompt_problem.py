"""The prompt editor's text as a problem: the one picked, or a prompt typed or pasted."""

from __future__ import annotations

import dataclasses

from coopcode import Problem, UserError

STUB_HINT = ("\nThe prompt is a Python function stub: a `def name(args):` line and a "
             "docstring saying what it does, with an example (Ctrl+N starts one).")


def problem_from_prompt(text: str, picked: Problem | None, picked_text: str) -> Problem:
    """The problem `text` states: `picked` where it is the text `picked` came from, else
    the text parsed afresh (UserError, with how a prompt reads where it is not Python with
    a function)."""
    if picked is not None and text == picked_text:
        return picked
    from coopcode import parse_problem_source

    try:
        parsed = parse_problem_source(text, "editor.py")
    except UserError as e:
        raise UserError(str(e) + ("" if looks_like_a_stub(text) else STUB_HINT)) from e
    if picked is not None and picked.contract is not None \
            and parsed.entry_point == picked.entry_point:
        # The picked problem's prompt, edited: aux's contract is still the one it had.
        parsed = dataclasses.replace(parsed, contract=picked.contract)
    return parsed


def looks_like_a_stub(text: str) -> bool:
    """Whether `text` is Python with a function (a stub with a slip, not prose)."""
    return any(line.lstrip().startswith("def ") for line in text.splitlines())
