"""A scripted pair of agents for demos, the end-to-end test and screenshots (`--scripted`).

It is the real `ScriptedEngine` (the Engine interface, streamed in chunks, honouring stop
strings and cancellation) with a script that answers like a cooperative helper/main pair:
correct code for a few known problems and for every `compose` problem (the helper its
contract's reference aux, main the outer step around a call of aux), a plausible but generic
answer otherwise. Under `contract` and `plan` it keeps to its part: the helper implements the
contract it is shown, the planner writes aux's contract (signature, docstring, `...`).
"""

from __future__ import annotations

import functools
import re

from coopcode import ScriptedEngine, docstring_block

KNOWN: dict[str, tuple[str, str]] = {
    "has_close_elements": (
        'def aux(a: float, b: float) -> float:\n'
        '    """Return the distance between two numbers."""\n'
        '    return abs(a - b)\n',
        'def has_close_elements(numbers: List[float], threshold: float) -> bool:\n'
        '    for i, a in enumerate(numbers):\n'
        '        for b in numbers[i + 1:]:\n'
        '            if aux(a, b) < threshold:\n'
        '                return True\n'
        '    return False\n',
    ),
    "below_zero": (
        'def aux(operations: List[int]) -> List[int]:\n'
        '    """Return the running balance after each operation."""\n'
        '    balance, out = 0, []\n'
        '    for op in operations:\n'
        '        balance += op\n'
        '        out.append(balance)\n'
        '    return out\n',
        'def below_zero(operations: List[int]) -> bool:\n'
        '    return any(b < 0 for b in aux(operations))\n',
    ),
}

_ENTRY = re.compile(r"(?:implement|Implement|Complete the function) `(\w+)`")
_BLOCK = re.compile(r"```python\n(.*?)\n```", re.DOTALL)
# What the prompts of `coopcode.schemes.contract_prompts` ask (the helper shown a contract
# alone, and main asked for aux's contract first).
_CONTRACT_HELPER = "Implement this function exactly as its docstring specifies"
_PLANNER = "specify ONE helper function"


@functools.cache
def _compose_pairs() -> dict[str, tuple[str, str]]:
    """Every compose problem's (helper, main): aux as its contract's reference, and main the
    canonical whole with aux's definition taken out (the outer step, around a call of aux)."""
    from coopcode import load_problems

    pairs = {}
    for p in load_problems("compose:all"):
        c = p.contract
        if c is None or c.solution is None or not p.canonical_solution:
            continue
        helper = f"{c.signature.rstrip()}\n{docstring_block(c.docstring, '    ')}{c.solution}"
        pairs[p.entry_point] = (helper, _entry_signature(p.prompt, p.entry_point)
                                + _without_aux(p.canonical_solution))
    return pairs


def _entry_signature(prompt: str, name: str) -> str:
    """The `def name(...):` line(s) of a problem's prompt, as the main prompt pre-fills them."""
    lines = prompt.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(":"))
    return "".join(lines[start:end + 1])


def _without_aux(body: str) -> str:
    """A canonical body with its nested `def aux` block taken out."""
    out, skipping = [], False
    for line in body.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip())
        if line.lstrip().startswith("def aux("):
            skipping, depth = True, indent
            continue
        if skipping and line.strip() and indent <= depth:
            skipping = False
        if not skipping:
            out.append(line)
    return "".join(out)


def _pair(name: str) -> tuple[str, str] | None:
    return KNOWN.get(name) or (_compose_pairs().get(name) if "_of_" in name else None)


def _docstring_key(code: str) -> str:
    """A contract's docstring, whitespace folded: the key a helper finds its contract by."""
    from coopcode import planned_contract

    found = planned_contract(code)
    return " ".join(found.docstring.split()) if found is not None else ""


def _stub(helper: str) -> str:
    """What the planner writes: aux's signature and docstring, `...` for the body."""
    from coopcode import contract_stub, planned_contract

    found = planned_contract(helper)
    return contract_stub(found) if found is not None else helper


@functools.cache
def _helpers_by_contract() -> dict[str, str]:
    return {_docstring_key(helper): helper
            for helper, _main in (*_compose_pairs().values(), *KNOWN.values())}


def _implement_contract(prompt: str) -> str | None:
    """The helper's code for the contract in `prompt`, if the demo knows one like it."""
    blocks = _BLOCK.findall(prompt)
    key = _docstring_key(blocks[0]) if blocks else ""
    return _helpers_by_contract().get(key) if key else None


def scripted_answer(prompt: str) -> str:
    """The scripted pair's whole answer to `prompt`, as a model would write it after the
    prompt's pre-filled start: tests drive their own engines with it."""
    names = _ENTRY.findall(prompt)
    name = names[-1] if names else "solution"
    helper_turn = "You are the helper" in prompt or "Revise your helper" in prompt
    helper, main = _pair(name) or (
        'def aux(x):\n    """Return x unchanged."""\n    return x\n',
        f"def {name}(*args):\n    raise NotImplementedError  # the demo agents know a few problems\n",
    )
    if _PLANNER in prompt:
        code = _stub(helper)
    elif _CONTRACT_HELPER in prompt:
        code = _implement_contract(prompt) or helper
    else:
        code = helper if helper_turn else main
    # The chat prompt may pre-fill the start of the code (`def aux(`, the signature): the
    # answer continues from there, as a model's would.
    fence = "```python\n"
    prefill = prompt.rsplit(fence, 1)[1] if fence in prompt[-600:] else ""
    if prefill and code.startswith(prefill):
        code = code[len(prefill):]
    elif prefill.startswith("def "):
        code = "    raise NotImplementedError  # the demo agents know a few problems\n"
    # The chat prompt pre-fills "```python\n"; the closing fence is the stop string, and the
    # prose after it must never reach the program.
    return code + "```\nThis code is correct.\n"


def demo_engine(*, chunk: int = 3, delay: float = 0.02) -> ScriptedEngine:
    """The scripted agents; `delay` per chunk makes the streaming visible to a human."""
    return ScriptedEngine(lambda prompt, _adapter, _i: scripted_answer(prompt), chunk=chunk, delay=delay,
                          model_name="scripted-demo")
