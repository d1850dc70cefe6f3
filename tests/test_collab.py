"""Collaboration schemes with a scripted engine: who sees what, in which order, and the program."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopcode.collab import SCHEMES, Collaboration, main_calls_helper, sample_seed
from coopcode.engines import SamplingParams, ScriptedEngine
from coopcode.errors import UserError
from coopcode.problems import load_problem_file

PROBLEM = load_problem_file(Path(__file__).resolve().parent.parent / "examples" / "below_zero.py")

HELPER_CODE = "def aux(ops):\n    total = 0\n    out = []\n    for o in ops:\n        total += o\n        out.append(total)\n    return out\n"
MAIN_CODE = ("def below_zero(operations: List[int]) -> bool:\n"
             "    return any(b < 0 for b in aux(operations))\n")


def _continue(prompt: str, full: str) -> str:
    """What a model writes after the pre-filled part of its answer (fence + prefill)."""
    prefill = prompt.rsplit("```python\n", 1)[-1]
    assert full.startswith(prefill), (prefill, full)
    return full[len(prefill):]


def script(prompt: str, adapter: str | None, index: int) -> str:
    """Answers like a chat model whose answer starts inside a pre-filled fence."""
    if "You are the helper" in prompt or "Revise your helper" in prompt:
        return _continue(prompt, HELPER_CODE + "```\nThis helper computes running sums.")
    return _continue(prompt, MAIN_CODE + f"\nprint(below_zero([1, -2]))  # sample {index}\n```")


def run(scheme: str, n: int = 2, **kw: object) -> tuple[ScriptedEngine, list]:
    engine = ScriptedEngine(script)
    collab = Collaboration(engine, scheme=scheme, params=SamplingParams(temperature=0.8, seed=3), **kw)
    return engine, collab.run(PROBLEM, list(range(n)))


def test_sequential_main_sees_the_helper_code() -> None:
    engine, attempts = run("sequential")
    assert len(engine.calls) == 2  # helper round, then main round
    helper_reqs, main_reqs = engine.calls
    assert all("You are the helper" in r.prompt for r in helper_reqs)
    assert all("def aux(ops)" in r.prompt and "already written this helper" in r.prompt
               for r in main_reqs)
    for a in attempts:
        assert a.helper_code == HELPER_CODE
        assert a.main_code == MAIN_CODE  # the stray print is gone
        assert a.program is not None and a.program.syntax_ok
        text = a.program.text
        assert text.startswith("from typing import List")
        assert text.index("def aux") < text.index("def below_zero")
        assert main_calls_helper(a.main_code, a.helper_code)


def test_parallel_agents_work_at_once_without_seeing_each_other() -> None:
    engine, attempts = run("parallel")
    assert len(engine.calls) == 1 and len(engine.calls[0]) == 4  # 2 helpers + 2 mains together
    mains = [r for r in engine.calls[0] if "You are the helper" not in r.prompt]
    assert all("cannot see it" in r.prompt and "def aux(ops)" not in r.prompt for r in mains)
    assert all(a.program and a.program.syntax_ok for a in attempts)


def test_concat_glues_two_independent_agents() -> None:
    engine, _ = run("concat")
    mains = [r for r in engine.calls[0] if "You are the helper" not in r.prompt]
    assert mains and all("teammate" not in r.prompt for r in mains)


def test_single_has_no_helper() -> None:
    engine, attempts = run("single")
    assert len(engine.calls) == 1
    assert not any("helper" in r.prompt.lower() for r in engine.calls[0])
    assert all(a.helper_code == "" and [o.role for o in a.outputs] == ["single"] for a in attempts)


def test_discussion_shows_each_agent_the_others_first_answer() -> None:
    engine, attempts = run("discussion", n=1)
    assert len(engine.calls) == 2
    second = engine.calls[1]
    helper_rev = next(r for r in second if "Revise your helper" in r.prompt)
    main_rev = next(r for r in second if "Revise your function" in r.prompt)
    assert "def below_zero" in helper_rev.prompt  # the helper sees main's code
    assert "def aux" in main_rev.prompt  # and main sees the helper's
    assert [o.role for o in attempts[0].outputs] == ["helper", "main", "helper", "main"]


def test_each_sample_has_its_own_stable_seed() -> None:
    engine, _ = run("sequential", n=3)
    seeds = [r.params.seed for r in engine.calls[0]]
    assert len(set(seeds)) == 3
    assert seeds[1] == sample_seed(3, PROBLEM.task_id, "sequential", "helper", 1, 1)
    # Asking for sample 1 alone gives it the same seed as in the batch of three.
    engine2 = ScriptedEngine(script)
    Collaboration(engine2, params=SamplingParams(temperature=0.8, seed=3)).run(PROBLEM, [1])
    assert engine2.calls[0][0].params.seed == seeds[1]


def test_streamed_deltas_are_labelled_by_role_and_sample() -> None:
    engine = ScriptedEngine(script)
    got: dict[tuple[str, int], str] = {}
    tokens: dict[tuple[str, int], int] = {}
    first: dict[tuple[str, int], tuple[str, int]] = {}

    def on_delta(role: str, sample: int, turn: int, text: str, n: int) -> None:
        got[(role, sample)] = got.get((role, sample), "") + text
        tokens[(role, sample)] = tokens.get((role, sample), 0) + n
        first.setdefault((role, sample), (text, n))

    attempts = Collaboration(engine).run(PROBLEM, [0, 1], on_delta=on_delta)
    assert set(got) == {("helper", 0), ("helper", 1), ("main", 0), ("main", 1)}
    # The pre-filled code is streamed as a delta of no sampled tokens; the rest add up to
    # what the engine reports it sampled.
    assert first[("helper", 0)] == ("def aux(", 0)
    for a in attempts:
        for role in ("helper", "main"):
            assert tokens[(role, a.sample)] == sum(o.n_tokens for o in a.outputs if o.role == role)
            assert tokens[(role, a.sample)] > 0
    # The pre-filled `def aux(` is streamed first, then the model's text, and the stop
    # string (the closing fence) cuts generation: nothing after it is streamed.
    assert got[("helper", 0)] == HELPER_CODE
    assert got[("main", 0)] == MAIN_CODE and "print" not in got[("main", 0)]


def test_base_models_get_completion_prompts() -> None:
    def body(prompt: str, adapter: str | None, index: int) -> str:
        if prompt.startswith("# The task below"):
            return "ops):\n    return [sum(ops[:i + 1]) for i in range(len(ops))]\n\n\ndef other():"
        return "    return any(b < 0 for b in aux(operations))\n\nprint(1)"

    engine = ScriptedEngine(body, instruct=False)
    (a,) = Collaboration(engine).run(PROBLEM, [0])
    assert engine.calls[1][0].prompt.endswith('"""\n')  # main continues after the docstring
    assert a.helper_code.startswith("def aux(ops):")
    assert a.main_code.startswith("def below_zero(operations: List[int]) -> bool:")
    assert "return any(b < 0" in a.main_code and "print" not in a.main_code
    assert a.program is not None and a.program.syntax_ok


def test_unknown_scheme_and_turns() -> None:
    with pytest.raises(UserError, match="unknown scheme"):
        Collaboration(ScriptedEngine({}), scheme="quartet")
    with pytest.raises(UserError, match="at least 1"):
        Collaboration(ScriptedEngine({}), turns=0)
    assert "sequential" in SCHEMES
