"""Prompts per role: single agent, helper, main (and their revision turns).

Instruct models get chat messages rendered with the model's own chat template, and the
assistant's answer is pre-filled with an opening code fence: the model writes code at once
and the closing fence is a precise stop string. Base models get plain completion prompts in
the HumanEval style and stop at the next top-level statement.

The helper writes auxiliary function(s) named `aux...`; the main agent writes the entry
point and may call them. This is the seed paper's set-up (helper = agent 0, main = agent 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from coopcode.problems import Problem

SYSTEM = "You are an expert Python programmer. You write correct, simple, efficient code."
CODE_FENCE = "```python\n"
# The closing fence ends the answer; top-level prints, asserts and demo blocks after the code
# are never part of it (indented ones inside functions do not match these).
CHAT_STOP = ("```", "\nprint(", "\nassert ", "\nif __name__", "\n# Test", "\n# Example",
             "\n# test", "\n# Check", "\ndef check", "\ndef test", "\nclass Test")
# Base-model completions end where the next top-level statement starts (HumanEval's stops).
COMPLETION_STOP = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#", "\nassert ", "\n```")
HELPER_NAME = "aux"

ROLES = ("single", "helper", "main")


@dataclass(frozen=True)
class Prompt:
    """A rendered prompt and what generation needs to know about it."""

    text: str  # what the engine receives
    stop: tuple[str, ...]
    prefix: str = ""  # code that precedes the generated text (completion mode: the signature)
    messages: tuple[dict[str, str], ...] = ()  # the chat, for the record


def _problem_block(problem: Problem) -> str:
    return f"```python\n{problem.prompt.rstrip()}\n```"


RULES = (
    "Reply with one ```python code block and nothing else: no explanation, no tests, "
    "no example usage, no print statements."
)


def single_message(problem: Problem) -> str:
    return (
        f"Complete the function `{problem.entry_point}`:\n\n{_problem_block(problem)}\n\n"
        f"Write the function `{problem.entry_point}`. {RULES}"
    )


def helper_message(problem: Problem) -> str:
    return (
        f"You are the helper on a two-person team. Your teammate will implement "
        f"`{problem.entry_point}` for this problem:\n\n{_problem_block(problem)}\n\n"
        f"Do NOT implement `{problem.entry_point}`. Write one helper function named "
        f"`{HELPER_NAME}` that does a useful part of the work, so that `{problem.entry_point}` "
        f"becomes easy to write by calling it. Give it a clear signature and a one-line "
        f"docstring saying what it returns. {RULES}"
    )


def main_message(problem: Problem, helper_code: str | None, *, knows_helper: bool = True) -> str:
    head = f"Implement `{problem.entry_point}` for this problem:\n\n{_problem_block(problem)}\n\n"
    if helper_code is not None and helper_code.strip():
        team = (
            f"Your teammate has already written this helper; it is defined in the same file, "
            f"so you may call it (do not copy or redefine it):\n\n```python\n"
            f"{helper_code.rstrip()}\n```\n\n"
        )
    elif knows_helper:
        team = (
            f"Your teammate is writing a helper function `{HELPER_NAME}` for this problem at the "
            f"same time; you cannot see it. You may call `{HELPER_NAME}` if you are sure what it "
            f"would do, but a self-contained solution is safer.\n\n"
        )
    else:
        team = ""
    return (
        head + team + f"Write the function `{problem.entry_point}`. {RULES}"
    )


def revision_message(role: str, previous_code: str, feedback: str, peer_code: str | None) -> str:
    """A follow-up turn: the agent sees its last code, the sandbox feedback and its peer's code."""
    peer = (
        f"Your teammate's current code:\n\n```python\n{peer_code.rstrip()}\n```\n\n"
        if peer_code and peer_code.strip() else ""
    )
    what = {
        "helper": f"Revise your helper `{HELPER_NAME}`",
        "main": "Revise your function",
        "single": "Revise your function",
    }[role]
    return (
        f"Your code:\n\n```python\n{previous_code.rstrip()}\n```\n\n{peer}"
        f"Running the combined program on the public examples gave:\n\n{feedback.rstrip()}\n\n"
        f"{what} so that it is correct. {RULES}"
    )


def entry_signature(problem: Problem) -> str:
    """The `def ...:` header of the entry point as the prompt writes it (may span lines)."""
    import ast

    try:
        module = ast.parse(problem.prompt)
    except SyntaxError:
        return ""
    lines = problem.prompt.splitlines()
    for node in module.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == problem.entry_point:
            end = node.body[0].lineno - 1 if node.body else node.lineno
            return "\n".join(lines[node.lineno - 1: end]).rstrip() + "\n"
    return ""


def helper_prefill(problem: Problem) -> str:
    """The helper's answer starts as `def aux(`: small models otherwise tend to write the
    entry point themselves, which leaves nothing to cooperate on."""
    return f"def {HELPER_NAME}("


def helper_stop(problem: Problem) -> tuple[str, ...]:
    return (*CHAT_STOP, f"\ndef {problem.entry_point}(")


def chat(
    render: object,
    user: str,
    history: list[dict[str, str]] | None = None,
    *,
    prefill: str = "",
    stop: tuple[str, ...] = CHAT_STOP,
) -> Prompt:
    """Messages rendered with `render(messages) -> str`; the answer is pre-filled with a code
    fence (and `prefill`, e.g. the function's signature), so the model writes code at once."""
    messages = [{"role": "system", "content": SYSTEM}, *(history or []), {"role": "user", "content": user}]
    text = render(messages) + CODE_FENCE + prefill  # type: ignore[operator]
    return Prompt(text=text, stop=stop, prefix=prefill, messages=tuple(messages))


# -- base (completion) models ----------------------------------------------------------------


def completion_main(problem: Problem, helper_code: str | None) -> Prompt:
    """HumanEval-style: the model continues the function body after the docstring."""
    before = f"{helper_code.rstrip()}\n\n\n" if helper_code and helper_code.strip() else ""
    text = before + problem.prompt
    return Prompt(text=text, stop=COMPLETION_STOP, prefix=problem.prompt)


def completion_helper(problem: Problem) -> Prompt:
    commented = "\n".join(f"# {line}" if line else "#" for line in problem.prompt.rstrip().splitlines())
    header = f"def {HELPER_NAME}("
    text = (
        f"# The task below will be solved by calling a helper function `{HELPER_NAME}`.\n"
        f"{commented}\n\n\n{header}"
    )
    return Prompt(text=text, stop=COMPLETION_STOP, prefix=header)
