"""A scripted pair of agents for demos, the end-to-end test and screenshots (`--scripted`).

It is the real `ScriptedEngine` (the Engine interface, streamed in chunks, honouring stop
strings and cancellation) with a script that answers like a cooperative helper/main pair:
correct code for a few known problems, a plausible but generic answer otherwise.
"""

from __future__ import annotations

import re

from coopcode import ScriptedEngine

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


def _answer(prompt: str) -> str:
    names = _ENTRY.findall(prompt)
    name = names[-1] if names else "solution"
    helper_turn = "You are the helper" in prompt or "Revise your helper" in prompt
    helper, main = KNOWN.get(name, (
        'def aux(x):\n    """Return x unchanged."""\n    return x\n',
        f"def {name}(*args):\n    raise NotImplementedError  # the demo agents know a few problems\n",
    ))
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
    return ScriptedEngine(lambda prompt, _adapter, _i: _answer(prompt), chunk=chunk, delay=delay,
                          model_name="scripted-demo")
