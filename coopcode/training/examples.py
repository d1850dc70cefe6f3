"""A warm start's data: the examples file, and the prompt and target each agent learns from.

The file (`coopcode train --algo sft --examples FILE`) is JSONL, one example a line:

    {"task_id": "compose/sum_of_digits", "helper": "def aux(n):\\n    ...", "main": "def sum_of_digits(n):\\n    ..."}
    {"task_id": "HumanEval/0", "solution": "def has_close_elements(numbers, threshold):\\n    ..."}

`helper` and `main` train a pair, `solution` one agent (`--scheme single`); a line may hold
all three, so one file warm-starts a pair and a single agent on the same problems
(`coopcode problems sft-examples` writes such a file from a set's canonical solutions).
Task ids are looked up in `--problems`.

Each agent learns on exactly the prompt it is given at bench and solve time: the scheme's own
first turn is replayed (`Scheme.first_turn`, `PromptBook`) with the example's code as each
agent's answer, so under `sequential` main's prompt shows the helper's code as the scheme
extracts it, and under `contract` the helper sees aux's contract alone. The target is what
the agent would write after its prompt: the code that follows the prompt's pre-filled start
(`def aux(`, the entry point's signature), then the closing fence whose stop string ends the
answer (base models: the end-of-text token). Imports above the function are left out (the
pre-filled start comes first; the prompt's own imports are in every program).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coopcode.code_analysis.docstrings import has_docstring
from coopcode.core.errors import UserError
from coopcode.core.events import Say
from coopcode.engines import Engine
from coopcode.problems import Problem
from coopcode.records.attempts import AgentOutput, Attempt
from coopcode.records.vocabulary import FinishReason, Role
from coopcode.schemes import PromptBook, SampleState, Scheme, adapter_of, prompts

PAIR = (Role.HELPER, Role.MAIN)
SINGLE = "solution"
KEYS = ("task_id", *PAIR, SINGLE)
FENCE_END = "\n```"  # the chat prompts' stop string: where a chat answer ends


@dataclass(frozen=True)
class Example:
    """One line of an examples file: a task and the code of each part."""

    task_id: str
    code: Mapping[str, str]  # "helper", "main", "solution" (those the line has)
    where: str  # file:line, for messages

    def has(self, keys: Sequence[str]) -> bool:
        return all(k in self.code for k in keys)


@dataclass(frozen=True)
class Target:
    """One agent's prompt and the text it learns to write after it."""

    task_id: str
    role: str  # the asking role (helper, main, single; planner under `plan`)
    prompt: str
    text: str
    prompt_ids: list[int] = field(repr=False)
    target_ids: list[int] = field(repr=False)

    @property
    def adapter(self) -> str:
        return adapter_of(self.role)


def read_examples(path: str) -> list[Example]:
    """The examples of a JSONL file; a bad line is a UserError naming file:line."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UserError(f"--examples {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"--examples {path}: unreadable ({e})") from None
    found = []
    for n, line in enumerate(lines, 1):
        if line.strip():
            found.append(_example(line, f"{path}:{n}"))
    if not found:
        raise UserError(f"--examples {path}: no examples (one JSON object a line)")
    return found


def _example(line: str, where: str) -> Example:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: not JSON ({e.msg}): one object a line, like "
                        '{"task_id": ..., "helper": ..., "main": ...}') from None
    if not isinstance(record, dict):
        raise UserError(f"{where}: not a JSON object")
    unknown = sorted(set(record) - set(KEYS))
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(unknown)}: use {', '.join(KEYS)}")
    if not isinstance(record.get("task_id"), str) or not record["task_id"].strip():
        raise UserError(f"{where}: no task_id (a string, e.g. \"compose/sum_of_digits\")")
    code = {}
    for key in (*PAIR, SINGLE):
        value = record.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            raise UserError(f"{where}: {key} must be code (a non-empty string)")
        code[key] = value
    if (Role.HELPER in code) != (Role.MAIN in code):
        lacks = Role.MAIN if Role.HELPER in code else Role.HELPER
        raise UserError(f"{where}: a pair needs both helper and main (no {lacks})")
    if not code:
        raise UserError(f"{where}: no code: give helper and main (a pair) or solution (one agent)")
    return Example(record["task_id"], code, where)


def needed_keys(scheme: Scheme) -> tuple[str, ...]:
    """What an example must hold to train the agents of `scheme`."""
    return (SINGLE,) if Role.SINGLE in scheme.roles else PAIR


def load_examples(path: str, problems: Sequence[Problem], scheme: Scheme,
                  say: Say | None = None) -> list[Example]:
    """The examples of `path` usable with `scheme`, their tasks in `problems`. Lines without
    the code the scheme needs are left out, and counted (`say`); none left is a UserError."""
    examples = read_examples(path)
    known = {p.task_id for p in problems}
    for ex in examples:
        if ex.task_id not in known:
            raise UserError(f"{ex.where}: task {ex.task_id!r} is not in the training problems: "
                            "pass the set it comes from with --problems")
    keys = needed_keys(scheme)
    usable = [ex for ex in examples if ex.has(keys)]
    what = " and ".join(keys)
    if not usable:
        raise UserError(f"--examples {path}: no line has {what}, which --scheme {scheme.name} "
                        "trains on" + (" (one agent: give solution)" if keys == (SINGLE,) else
                                       " (a pair: give helper and main; --scheme single trains "
                                       "one agent on solution)"))
    if len(usable) < len(examples) and say is not None:
        say(f"{len(examples) - len(usable)} of the {len(examples)} examples have no "
            f"{what} and are left out (--scheme {scheme.name})")
    return usable


def render_targets(examples: Sequence[Example], problems: Sequence[Problem], scheme: Scheme,
                   engine: Engine) -> list[list[Target]]:
    """Each example's targets, one per agent answer of the scheme's first turn."""
    by_id = {p.task_id: p for p in problems}
    book = PromptBook(engine)
    return [_targets(ex, by_id[ex.task_id], scheme, book, engine) for ex in examples]


def _targets(example: Example, problem: Problem, scheme: Scheme, book: PromptBook,
             engine: Engine) -> list[Target]:
    """Replay the scheme's first turn with the example's code as each answer."""
    state = SampleState(problem, 0, book, Attempt(problem.task_id, 0, scheme.name))
    out = []
    try:
        for asks in scheme.first_turn(state):
            for ask in asks:
                code = _code_for(ask.role, example, problem)
                text = target_text(ask.prompt, code, engine)
                if text is None:
                    start = ask.prompt.prefix.strip().splitlines()[:1] or [""]
                    raise UserError(f"{example.where}: the {ask.role}'s code does not continue "
                                    f"its prompt, which starts the answer with `{start[0]}`: "
                                    "write the function with that signature (imports may "
                                    "come first)")
                answer = text.removesuffix(FENCE_END)
                state.record(ask, AgentOutput(
                    role=ask.role, turn=1, raw=answer,
                    code=book.extract(problem, ask.role, ask.prompt, answer),
                    n_tokens=0, finish_reason=FinishReason.STOP, adapter=adapter_of(ask.role),
                    prompt=ask.prompt.text))
                out.append(Target(problem.task_id, ask.role, ask.prompt.text, text,
                                  engine.encode(ask.prompt.text), engine.encode(text)))
    except UserError as e:
        message = str(e)
        raise UserError(message if message.startswith(example.where)
                        else f"{example.where}: {message}") from None
    return out


def _code_for(role: str, example: Example, problem: Problem) -> str:
    if role == Role.SINGLE:
        return example.code[SINGLE]
    if role in example.code:
        return example.code[role]
    if role == Role.PLANNER and problem.contract is not None:
        # `plan`: main first writes aux's contract; the problem's is the one to learn.
        from coopcode.schemes.contracts import contract_stub

        return contract_stub(problem.contract)
    raise UserError(f"{example.where}: the scheme asks the {role}, and the example has no "
                    f"code for it")


def target_text(prompt: prompts.Prompt, code: str, engine: Engine) -> str | None:
    """What the model writes after `prompt` to answer `code`, its end included (None: the
    code does not continue the prompt's pre-filled start)."""
    rest = continuation(prompt.prefix, code)
    if rest is None:
        return None
    if prompt.messages:  # a chat answer inside a pre-filled fence: the fence closes it
        return rest.rstrip() + FENCE_END
    eos = getattr(getattr(engine, "tokenizer", None), "eos_token", None) or ""
    return rest.rstrip() + "\n" + eos


_IMPORT = re.compile(r"^(import |from \S+ import )")


def continuation(prefix: str, code: str) -> str | None:
    """`code` after the part `prefix` already wrote: the code itself when it starts with the
    prefix (after imports, which the prefix leaves no room for); else, when the prefix is a
    function's header (and docstring), the body of `code`'s function of that name. None when
    neither fits."""
    lines = code.strip("\n").splitlines(keepends=True)
    while lines and (not lines[0].strip() or _IMPORT.match(lines[0])):
        lines.pop(0)
    rest = "".join(lines)
    if rest.startswith(prefix):
        return rest[len(prefix):]
    header = _header(prefix)
    if header is None:
        return None
    name, has_doc = header
    try:
        module = ast.parse(rest)
    except SyntaxError:
        return None
    first = module.body[0] if module.body else None
    if not isinstance(first, ast.FunctionDef | ast.AsyncFunctionDef) or first.name != name:
        return None
    body = first.body
    if has_doc and len(body) > 1 and has_docstring(first):
        body = body[1:]  # the prompt shows the docstring already
    start = body[0].lineno - 1
    return "".join(rest.splitlines(keepends=True)[start:])


def _header(prefix: str) -> tuple[str, bool] | None:
    """(function name, whether the prefix holds its docstring) when `prefix` ends with a
    function's header, optionally its docstring after it; else None."""
    try:
        module = ast.parse(prefix.rstrip("\n") + "\n    ...\n")
    except SyntaxError:
        return None
    fn = module.body[-1] if module.body else None
    if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        return None
    return fn.name, len(fn.body) > 1 and has_docstring(fn)
