"""The schemes with a scripted engine: who sees what, after which answer, and the program."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopcode.code_analysis.usage import main_calls_helper
from coopcode.collaboration.scheduler import Scheduler, sample_specs
from coopcode.core.errors import UserError
from coopcode.engines import GenerationRequest, SamplingParams, ScriptedEngine
from coopcode.problems import load_problem_file
from coopcode.records.attempts import sample_seed
from coopcode.schemes import SCHEMES, get_scheme

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


def run(scheme: str, n: int = 2, engine: ScriptedEngine | None = None, **kw: object) -> tuple[ScriptedEngine, list]:
    engine = engine or ScriptedEngine(script)
    done: dict[int, object] = {}
    specs = sample_specs(PROBLEM, get_scheme(scheme), range(n), SamplingParams(temperature=0.8, seed=3))
    Scheduler(engine, **kw).run(specs, lambda state, _v: done.__setitem__(state.sample, state.attempt))  # type: ignore[arg-type]
    return engine, [done[i] for i in range(n)]


def requests(engine: ScriptedEngine) -> list[GenerationRequest]:
    """Every request the engine got, in order."""
    return [r for call in engine.calls for r in call]


def is_helper(r: GenerationRequest) -> bool:
    return "You are the helper" in r.prompt


def test_sequential_main_sees_the_helper_code_after_the_helper_answered() -> None:
    engine, attempts = run("sequential", n=3)
    reqs = requests(engine)
    assert sum(map(is_helper, reqs)) == 3 and len(reqs) == 6
    for r in reqs:
        if not is_helper(r):
            assert "def aux(ops)" in r.prompt and "already written this helper" in r.prompt
    for i in range(3):  # each sample's main turn comes after its helper's
        seed = {role: sample_seed(3, PROBLEM.task_id, "sequential", role, 1, i) for role in ("helper", "main")}
        order = [r.params.seed for r in reqs]
        assert order.index(seed["helper"]) < order.index(seed["main"])
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
    reqs = requests(engine)
    assert len(reqs) == 4
    mains = [r for r in reqs if not is_helper(r)]
    assert all("cannot see it" in r.prompt and "def aux(ops)" not in r.prompt for r in mains)
    assert all(a.program and a.program.syntax_ok for a in attempts)


def test_concat_glues_two_independent_agents() -> None:
    engine, _ = run("concat")
    mains = [r for r in requests(engine) if not is_helper(r)]
    assert mains and all("teammate" not in r.prompt for r in mains)


def test_single_has_no_helper() -> None:
    engine, attempts = run("single")
    assert not any("helper" in r.prompt.lower() for r in requests(engine))
    assert all(a.helper_code == "" and [o.role for o in a.outputs] == ["single"] for a in attempts)


def test_discussion_shows_each_agent_the_others_first_answer() -> None:
    engine, attempts = run("discussion", n=1)
    reqs = requests(engine)
    helper_rev = next(r for r in reqs if "Revise your helper" in r.prompt)
    main_rev = next(r for r in reqs if "Revise your function" in r.prompt)
    assert "def below_zero" in helper_rev.prompt  # the helper sees main's code
    assert "def aux" in main_rev.prompt  # and main sees the helper's
    assert reqs.index(helper_rev) >= 2 and reqs.index(main_rev) >= 2  # after the first round
    assert [o.role for o in attempts[0].outputs] == ["helper", "main", "helper", "main"]


def test_each_sample_has_its_own_stable_seed() -> None:
    engine, attempts = run("sequential", n=3)
    seeds = [r.params.seed for r in requests(engine) if is_helper(r)]
    assert sorted(seeds) == sorted(sample_seed(3, PROBLEM.task_id, "sequential", "helper", 1, i)
                                   for i in range(3))
    assert [o.seed for o in attempts[1].outputs] == [
        sample_seed(3, PROBLEM.task_id, "sequential", role, 1, 1) for role in ("helper", "main")]
    # Asking for sample 1 alone gives it the same seed as among three.
    engine2 = ScriptedEngine(script)
    done: list = []
    specs = sample_specs(PROBLEM, get_scheme("sequential"), [1], SamplingParams(temperature=0.8, seed=3))
    Scheduler(engine2).run(specs, lambda s, _v: done.append(s.attempt))
    assert [o.seed for o in done[0].outputs] == [o.seed for o in attempts[1].outputs]


def test_streamed_deltas_are_labelled_by_role_and_sample() -> None:
    engine = ScriptedEngine(script)
    got: dict[tuple[str, int], str] = {}
    tokens: dict[tuple[str, int], int] = {}
    first: dict[tuple[str, int], tuple[str, int]] = {}

    def on_delta(state: object, role: str, turn: int, text: str, n: int) -> None:
        key = (role, state.sample)  # type: ignore[attr-defined]
        got[key] = got.get(key, "") + text
        tokens[key] = tokens.get(key, 0) + n
        first.setdefault(key, (text, n))

    _, attempts = run("sequential", engine=engine, on_delta=on_delta)
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

    engine, (a,) = run("sequential", n=1, engine=ScriptedEngine(body, instruct=False))
    main = next(r for r in requests(engine) if not r.prompt.startswith("# The task below"))
    assert main.prompt.endswith('"""\n')  # main continues after the docstring
    assert a.helper_code.startswith("def aux(ops):")
    assert a.main_code.startswith("def below_zero(operations: List[int]) -> bool:")
    assert "return any(b < 0" in a.main_code and "print" not in a.main_code
    assert a.program is not None and a.program.syntax_ok


def test_unknown_scheme() -> None:
    with pytest.raises(UserError, match="unknown scheme 'quartet'"):
        get_scheme("quartet")
    assert SCHEMES == ("single", "sequential", "parallel", "concat", "discussion", "contract",
                       "contract+code", "plan", "plan+code")


def test_a_scheme_is_asked_what_it_is_and_one_that_says_the_impossible_is_refused() -> None:
    from coopcode.schemes import (
        Scheme,
        adapter_of,
        get_scheme,
        main_role,
        per_role,
        register_scheme,
        trainable_scheme_names,
    )

    assert trainable_scheme_names() == ("sequential", "parallel", "contract", "contract+code",
                                        "plan", "plan+code")
    assert get_scheme("sequential").main_sees_helper and not get_scheme("parallel").main_sees_helper
    assert [adapter_of(r) for r in ("helper", "main", "single", "planner")] == \
        ["helper", "main", "main", "main"]
    assert per_role("h", "m") == {"helper": "h", "main": "m", "single": "m", "planner": "m"}
    assert main_role(("helper", "single")) == "single" and main_role(("main",)) == "main"

    class Lonely(Scheme):
        name, roles, trainable = "lonely", ("single",), True

    class Blind(Scheme):
        name, roles, main_sees_helper = "blind-single", ("single",), True

    for impossible in (Lonely, Blind):
        with pytest.raises(ValueError, match=impossible.name):
            register_scheme(impossible)
        assert impossible.name not in trainable_scheme_names()
