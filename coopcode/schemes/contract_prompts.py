"""Prompts of the schemes that keep each agent to its part (`contract`, `plan`).

Kept apart from `coopcode.schemes.prompts` (whose texts they reuse: the system prompt, the
rules, the code fence and stops): a run's prompt fingerprint hashes the prompt modules its
schemes use, so runs of the older schemes keep the fingerprint they were made with.
"""

from __future__ import annotations

from coopcode.problems import Problem
from coopcode.schemes.prompts import (
    CHAT_STOP,
    COMPLETION_STOP,
    HELPER_NAME,
    RULES,
    Prompt,
    _problem_block,  # the task as every prompt shows it
)


def contract_helper_message(contract_prompt: str) -> str:
    """The helper under `contract`/`plan`: the contract alone, not the task it serves."""
    return (
        f"You are the helper on a two-person team. Implement this function exactly as its "
        f"docstring specifies; your teammate's code calls it:\n\n```python\n"
        f"{contract_prompt.rstrip()}\n```\n\nWrite the function `{HELPER_NAME}`. {RULES}"
    )


def contract_main_message(problem: Problem, stub: str, helper_code: str | None = None) -> str:
    """Main under `contract`/`plan`: the whole task and aux's contract (its code too, with
    `--main-sees code`), never asked to write aux itself."""
    shown = (f"Your teammate implemented it as:\n\n```python\n{helper_code.rstrip()}\n```\n\n"
             if helper_code is not None and helper_code.strip() else "")
    return (
        f"Implement `{problem.entry_point}` for this problem:\n\n{_problem_block(problem)}\n\n"
        f"Your teammate implements this helper; it is defined in the same file, so call it "
        f"where it helps (do not define `{HELPER_NAME}` yourself):\n\n```python\n"
        f"{stub.rstrip()}\n```\n\n{shown}Write the function `{problem.entry_point}`. {RULES}"
    )


def planner_message(problem: Problem) -> str:
    """Main's first step under `plan`: aux's contract, for a teammate to implement."""
    return (
        f"You lead a two-person team on this problem:\n\n{_problem_block(problem)}\n\n"
        f"Before you implement `{problem.entry_point}`, specify ONE helper function "
        f"`{HELPER_NAME}` that does a separate, useful part of the work; a teammate will "
        f"implement it and you will call it. Write only its signature with type hints and a "
        f"docstring that says exactly what it returns, with one example, and `...` as its "
        f"body. Do not implement it, and do not write `{problem.entry_point}`. Reply with one "
        f"```python code block and nothing else."
    )


def planner_stop(problem: Problem) -> tuple[str, ...]:
    return (*CHAT_STOP, f"\ndef {problem.entry_point}(")


def completion_contract_helper(contract_prompt: str) -> Prompt:
    """A base model continues aux's body after its contract's docstring."""
    text = contract_prompt.rstrip("\n") + "\n"
    return Prompt(text=text, stop=COMPLETION_STOP, prefix=text)


def completion_contract_main(problem: Problem, stub: str, helper_code: str | None) -> Prompt:
    """A base model continues the entry point, aux's contract (or code) above it."""
    above = helper_code if helper_code is not None and helper_code.strip() else stub
    text = f"{above.rstrip()}\n\n\n{problem.prompt}"
    return Prompt(text=text, stop=COMPLETION_STOP, prefix=problem.prompt)


def completion_planner(problem: Problem) -> Prompt:
    commented = "\n".join(f"# {line}" if line else "#" for line in problem.prompt.rstrip().splitlines())
    header = f"def {HELPER_NAME}("
    text = (f"# The task below will call a helper `{HELPER_NAME}`; its contract (signature and "
            f"docstring) first.\n{commented}\n\n\n{header}")
    return Prompt(text=text, stop=COMPLETION_STOP, prefix=header)
