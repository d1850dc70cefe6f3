"""The prompts an agent is given and the code taken from its answer, for one engine.

Chat (instruct) models get chat prompts whose answer is pre-filled with a code fence and the
start of the code (`def aux(`, the entry point's signature); base models get HumanEval-style
completion prompts. The texts themselves live in `coopcode.schemes.prompts` (whose source is hashed
into every result, so results made with other prompts are never mixed).
"""

from __future__ import annotations

from typing import Protocol

from coopcode.code_analysis.program import extract_code, prompt_context
from coopcode.problems import Contract, Problem
from coopcode.records.vocabulary import Role
from coopcode.schemes import contract_prompts, prompts
from coopcode.schemes.contracts import contract_stub


class ChatTemplate(Protocol):
    """What the prompts need of an engine (every `coopcode.engines.Engine` is one): whether
    its model takes chat prompts, and its chat template. Named here so that the schemes stay
    below the engines, which they never drive."""

    instruct: bool

    def render_chat(self, messages: list[dict[str, str]]) -> str: ...


class PromptBook:
    """Prompt builders and code extraction for one engine (its chat template, or none)."""

    def __init__(self, engine: ChatTemplate) -> None:
        self.engine = engine

    def chat(self, problem: Problem, role: str, user: str,
             history: list[dict[str, str]] | None = None) -> prompts.Prompt:
        if role == Role.HELPER:
            return prompts.chat(self.engine.render_chat, user, history,
                                prefill=prompts.helper_prefill(problem), stop=prompts.helper_stop(problem))
        return prompts.chat(self.engine.render_chat, user, history,
                            prefill=prompts.entry_signature(problem))

    def first(self, problem: Problem, role: str, helper_code: str | None = None, *,
              knows_helper: bool = False) -> prompts.Prompt:
        """An agent's first prompt: `helper`, `single`, or `main` (shown `helper_code`, or told
        that a helper is coming when `knows_helper`)."""
        if not self.engine.instruct:
            if role == Role.HELPER:
                return prompts.completion_helper(problem)
            return prompts.completion_main(problem, helper_code)
        if role == Role.HELPER:
            return self.chat(problem, role, prompts.helper_message(problem))
        if role == Role.SINGLE:
            return self.chat(problem, role, prompts.single_message(problem))
        return self.chat(problem, role, prompts.main_message(problem, helper_code,
                                                             knows_helper=knows_helper))

    def contract_helper(self, problem: Problem, contract: Contract) -> prompts.Prompt:
        """The helper under `contract`/`plan`: aux's contract alone, its signature pre-filled."""
        if not self.engine.instruct:
            return contract_prompts.completion_contract_helper(contract.prompt)
        return prompts.chat(self.engine.render_chat, contract_prompts.contract_helper_message(contract.prompt),
                            prefill=contract.signature.rstrip() + "\n",
                            stop=prompts.helper_stop(problem))

    def contract_main(self, problem: Problem, contract: Contract,
                      helper_code: str | None = None) -> prompts.Prompt:
        """Main under `contract`/`plan`: the task and aux's contract (and, with `--main-sees
        code`, the helper's code)."""
        stub = contract_stub(contract)
        if not self.engine.instruct:
            return contract_prompts.completion_contract_main(problem, stub, helper_code)
        return self.chat(problem, Role.MAIN, contract_prompts.contract_main_message(problem, stub, helper_code))

    def planner(self, problem: Problem) -> prompts.Prompt:
        """Main's first step under `plan`: aux's contract, `def aux(` pre-filled."""
        if not self.engine.instruct:
            return contract_prompts.completion_planner(problem)
        return prompts.chat(self.engine.render_chat, contract_prompts.planner_message(problem),
                            prefill=prompts.helper_prefill(problem),
                            stop=contract_prompts.planner_stop(problem))

    def revision(self, problem: Problem, role: str, first: prompts.Prompt, own: str,
                 peer: str | None, feedback: str) -> prompts.Prompt:
        """The conversation so far (first prompt, own answer) and a request to revise."""
        if not self.engine.instruct:
            return first  # base models get no conversation: they resample from the start
        history = list(first.messages[1:]) + [
            {"role": "assistant", "content": f"```python\n{own.rstrip()}\n```"}
        ]
        return self.chat(problem, role, prompts.revision_message(role, own, feedback, peer), history)

    def extract(self, problem: Problem, role: str, prompt: prompts.Prompt, text: str) -> str:
        """The code of an answer (the pre-filled part included)."""
        code = extract_code(text, prefix=prompt.prefix)
        if prompt.prefix and role not in (Role.HELPER, Role.PLANNER):
            # Completion mode continued the whole prompt: keep only what the model added.
            context = prompt_context(problem.prompt, problem.entry_point)
            code = drop_blocks(code, context)
        return code


def drop_blocks(code: str, context: str) -> str:
    """Remove top-level blocks of `code` that appear verbatim in `context`."""
    if not context.strip():
        return code
    blocks = code.split("\n\n\n")
    kept = [b for b in blocks if b.strip() and b.strip() not in context]
    return "\n\n\n".join(b.strip("\n") for b in kept) + "\n" if kept else code
