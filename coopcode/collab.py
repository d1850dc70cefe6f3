"""Collaboration schemes: how the helper and the main agent produce one program.

- `single`: one agent writes the function (the main adapter, if any, is that agent).
- `sequential` (default, the seed's architecture): the helper writes `aux`; the main agent
  sees the helper's code and writes the entry point, free to call it.
- `parallel`: both work at once; the main agent knows a helper `aux` is coming, not its code.
- `concat`: two independent agents (a helper and a single-agent solver) glued together.
- `discussion`: a parallel round, then one round where each sees the other's first answer.

With `turns > 1`, after each turn the program runs against the problem's *public* examples
(never the hidden tests) and each agent revises its code from that feedback. A sample stops
early once it passes every public example.

All samples of a problem are generated together: every agent request of a round goes to the
engine at once, so the engine can batch them. Each (task, role, turn, sample) has its own seed,
so a sample does not depend on what else was in its batch.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from coopcode import prompts
from coopcode.code import Program, combine, defines, extract_code, prompt_context
from coopcode.engines import Completion, Engine, GenerationRequest, SamplingParams
from coopcode.errors import UserError
from coopcode.problems import Problem
from coopcode.rewards import RewardBreakdown
from sandbox import Job, Sandbox, Verdict

SCHEMES = ("single", "sequential", "parallel", "concat", "discussion")
DEFAULT_SCHEME = "sequential"

# (agent role, sample index, turn, text delta, tokens the model sampled for it: 0 for the
# code the prompt pre-filled)
AgentDelta = Callable[[str, int, int, str, int], None]


@dataclass
class AgentOutput:
    """What one agent wrote in one turn."""

    role: str  # "helper", "main" or "single"
    turn: int
    raw: str  # the model's text
    code: str  # the code extracted from it
    n_tokens: int
    finish_reason: str
    adapter: str | None
    prompt: str  # the rendered prompt (kept for the record)
    seconds: float = 0.0
    seed: int = 0  # the sampling seed of this output (sample_seed of task, scheme, role, turn, sample)
    token_ids: list[int] = field(default_factory=list, repr=False)  # sampled ids (training)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("token_ids")  # the text is the record; ids matter only to a live trainer
        return d


@dataclass
class Attempt:
    """One sample's collaboration: every agent output, the final code and program."""

    task_id: str
    sample: int
    scheme: str
    outputs: list[AgentOutput] = field(default_factory=list)
    helper_code: str = ""
    main_code: str = ""
    program: Program | None = None
    verdict: Verdict | None = None  # hidden tests, filled in by the caller
    reward: RewardBreakdown | None = None
    turns_used: int = 1
    gen_seconds: float = 0.0
    feedback: str = ""  # what the agents were last told about the public examples

    @property
    def n_tokens(self) -> int:
        return sum(o.n_tokens for o in self.outputs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "sample": self.sample,
            "scheme": self.scheme,
            "outputs": [o.to_dict() for o in self.outputs],
            "helper_code": self.helper_code,
            "main_code": self.main_code,
            "program": self.program.text if self.program else "",
            "syntax_ok": self.program.syntax_ok if self.program else False,
            "verdict": self.verdict.to_dict() if self.verdict else None,
            "reward": self.reward.to_dict() if self.reward else None,
            "turns_used": self.turns_used,
            "feedback": self.feedback,
            "n_tokens": self.n_tokens,
            "gen_seconds": round(self.gen_seconds, 3),
        }


def sample_seed(seed: int, *parts: object) -> int:
    """A stable seed for one (task, role, turn, sample): independent of batching and order."""
    key = ":".join(str(p) for p in (seed, *parts)).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


@dataclass(frozen=True)
class _Ask:
    """One agent request for one sample, before it goes to the engine."""

    sample: int
    role: str
    prompt: prompts.Prompt
    adapter: str | None
    turn: int
    seed: int = 0  # set when it goes to the engine


class Collaboration:
    """Runs a scheme for one problem and any set of sample indices."""

    def __init__(
        self,
        engine: Engine,
        *,
        scheme: str = DEFAULT_SCHEME,
        params: SamplingParams | None = None,
        helper_adapter: str | None = None,
        main_adapter: str | None = None,
        turns: int = 1,
        sandbox: Sandbox | None = None,
        feedback_timeout: float = 5.0,
    ) -> None:
        if scheme not in SCHEMES:
            raise UserError(f"unknown scheme {scheme!r}: use one of {', '.join(SCHEMES)}")
        if turns < 1:
            raise UserError(f"--turns must be at least 1 (got {turns})")
        if turns > 1 and sandbox is None:
            raise ValueError("multi-turn collaboration needs a sandbox for feedback")
        self.engine, self.scheme, self.turns = engine, scheme, turns
        self.params = params or SamplingParams()
        self.helper_adapter, self.main_adapter = helper_adapter, main_adapter
        self.sandbox, self.feedback_timeout = sandbox, feedback_timeout

    # -- prompts ----------------------------------------------------------------------------

    def _chat(self, problem: Problem, role: str, user: str,
              history: list[dict[str, str]] | None = None) -> prompts.Prompt:
        if role == "helper":
            return prompts.chat(self.engine.render_chat, user, history,
                                prefill=prompts.helper_prefill(problem), stop=prompts.helper_stop(problem))
        return prompts.chat(self.engine.render_chat, user, history,
                            prefill=prompts.entry_signature(problem))

    def _first_prompts(self, problem: Problem, role: str, helper_code: str | None) -> prompts.Prompt:
        if not self.engine.instruct:
            if role == "helper":
                return prompts.completion_helper(problem)
            return prompts.completion_main(problem, helper_code)
        if role == "helper":
            return self._chat(problem, role, prompts.helper_message(problem))
        if role == "single":
            return self._chat(problem, role, prompts.single_message(problem))
        knows = self.scheme in ("parallel", "discussion")
        return self._chat(problem, role, prompts.main_message(problem, helper_code, knows_helper=knows))

    def _revision_prompt(
        self, problem: Problem, role: str, first: prompts.Prompt, own: str, peer: str | None,
        feedback: str,
    ) -> prompts.Prompt:
        if not self.engine.instruct:
            return first  # base models get no conversation: they resample from the start
        history = list(first.messages[1:]) + [
            {"role": "assistant", "content": f"```python\n{own.rstrip()}\n```"}
        ]
        return self._chat(problem, role, prompts.revision_message(role, own, feedback, peer), history)

    # -- generation -------------------------------------------------------------------------

    def _adapter(self, role: str) -> str | None:
        return self.helper_adapter if role == "helper" else self.main_adapter

    def _ask(self, problem: Problem, asks: list[_Ask], on_delta: AgentDelta | None,
             cancel: threading.Event | None) -> list[tuple[_Ask, Completion, str]]:
        requests = [
            GenerationRequest(
                prompt=a.prompt.text,
                params=self.params.with_(
                    n=1,
                    stop=a.prompt.stop,
                    seed=sample_seed(self.params.seed, problem.task_id, self.scheme, a.role,
                                     a.turn, a.sample),
                ),
                adapter=a.adapter,
            )
            for a in asks
        ]

        def relay(ri: int, _si: int, text: str, tokens: int) -> None:
            if on_delta is not None:
                on_delta(asks[ri].role, asks[ri].sample, asks[ri].turn, text, tokens)

        # The pre-filled code (`def aux(`, the signature) is part of the agent's code: stream it
        # first, so a viewer reads code from its first line.
        for ri, a in enumerate(asks):
            if a.prompt.prefix:
                relay(ri, 0, a.prompt.prefix, 0)
        results = self.engine.generate(requests, on_delta=relay, cancel=cancel)
        out = []
        for a, r, (completion,) in zip(asks, requests, results):
            code = self._extract(problem, a, completion.text)
            out.append((replace(a, seed=r.params.seed), completion, code))
        return out

    def _extract(self, problem: Problem, ask: _Ask, text: str) -> str:
        code = extract_code(text, prefix=ask.prompt.prefix)
        if ask.prompt.prefix and ask.role != "helper":
            # Completion mode continued the whole prompt: keep only what the model added.
            context = prompt_context(problem.prompt, problem.entry_point)
            code = _drop_blocks(code, context)
        return code

    def run(
        self,
        problem: Problem,
        samples: Sequence[int],
        on_delta: AgentDelta | None = None,
        cancel: threading.Event | None = None,
    ) -> list[Attempt]:
        """Attempts for the given sample indices of `problem` (programs built, not executed)."""
        started = time.time()
        attempts = {s: Attempt(problem.task_id, s, self.scheme) for s in samples}
        first: dict[tuple[int, str], prompts.Prompt] = {}
        live = list(samples)
        for turn in range(1, self.turns + 1):
            if turn == 1:
                self._first_turn(problem, live, attempts, first, on_delta, cancel)
            else:
                live = self._revise(problem, live, attempts, first, turn, on_delta, cancel)
            for s in live:
                a = attempts[s]
                a.program = combine(problem.prompt, problem.entry_point, a.helper_code, a.main_code)
                a.turns_used = turn
            if cancel is not None and cancel.is_set():
                break
            if turn < self.turns:
                live = self._still_failing(problem, live, attempts)
                if not live:
                    break
        elapsed = time.time() - started
        for a in attempts.values():
            a.gen_seconds = elapsed / max(len(attempts), 1)
        return [attempts[s] for s in samples]

    def _first_turn(self, problem: Problem, live: list[int], attempts: dict[int, Attempt],
                    first: dict[tuple[int, str], prompts.Prompt], on_delta: AgentDelta | None,
                    cancel: threading.Event | None) -> None:
        def record(results: list[tuple[_Ask, Completion, str]]) -> None:
            for a, _c, _code in results:
                first[(a.sample, a.role)] = a.prompt
            _store(attempts, results)

        def ask(role: str, s: int, helper_code: str | None = None) -> _Ask:
            return _Ask(s, role, self._first_prompts(problem, role, helper_code), self._adapter(role), 1)

        if self.scheme == "single":
            record(self._ask(problem, [ask("single", s) for s in live], on_delta, cancel))
        elif self.scheme == "sequential":
            record(self._ask(problem, [ask("helper", s) for s in live], on_delta, cancel))
            record(self._ask(problem, [ask("main", s, attempts[s].helper_code) for s in live],
                             on_delta, cancel))
        elif self.scheme in ("parallel", "concat", "discussion"):
            main_role = "single" if self.scheme == "concat" else "main"
            asks = [ask("helper", s) for s in live] + [ask(main_role, s) for s in live]
            record(self._ask(problem, asks, on_delta, cancel))
            if self.scheme == "discussion":
                self._discuss(problem, live, attempts, first, on_delta, cancel)

    def _discuss(self, problem: Problem, live: list[int], attempts: dict[int, Attempt],
                 first: dict[tuple[int, str], prompts.Prompt], on_delta: AgentDelta | None,
                 cancel: threading.Event | None) -> None:
        """One round in which each agent sees the other's first answer and revises."""
        asks = []
        for s in live:
            a = attempts[s]
            for role, own, peer in (("helper", a.helper_code, a.main_code),
                                    ("main", a.main_code, a.helper_code)):
                note = "Your teammate's code is shown above; make the two fit together."
                p = self._revision_prompt(problem, role, first[(s, role)], own, peer, note)
                asks.append(_Ask(s, role, p, self._adapter(role), 1))
        _store(attempts, self._ask(problem, asks, on_delta, cancel))

    def _still_failing(self, problem: Problem, live: list[int], attempts: dict[int, Attempt]) -> list[int]:
        """Run each live sample on the public examples; keep those that do not pass them all."""
        if not problem.public_tests:
            return live
        assert self.sandbox is not None
        jobs = [Job(program=_program_text(attempts[s]), tests=problem.public_tests,
                    entry_point=problem.entry_point, timeout=self.feedback_timeout) for s in live]
        verdicts = self.sandbox.run_many(jobs)
        failing = []
        for s, v in zip(live, verdicts):
            attempts[s].feedback = feedback_text(v)
            if not v.passed:
                failing.append(s)
        return failing

    def _revise(self, problem: Problem, live: list[int], attempts: dict[int, Attempt],
                first: dict[tuple[int, str], prompts.Prompt], turn: int,
                on_delta: AgentDelta | None, cancel: threading.Event | None) -> list[int]:
        asks = []
        for s in live:
            a = attempts[s]
            feedback = a.feedback
            roles = ["single"] if self.scheme == "single" else ["helper", "main"]
            for role in roles:
                own = a.helper_code if role == "helper" else a.main_code
                peer = None if role == "single" else (a.main_code if role == "helper" else a.helper_code)
                key = (s, role) if (s, role) in first else (s, "single" if role == "main" else role)
                p = self._revision_prompt(problem, role, first[key], own, peer, feedback)
                asks.append(_Ask(s, role, p, self._adapter(role), turn))
        _store(attempts, self._ask(problem, asks, on_delta, cancel))
        return live


def _store(attempts: dict[int, Attempt], results: list[tuple[_Ask, Completion, str]]) -> None:
    """Record each agent's output on its attempt; the latest code of a role is the one used."""
    for a, c, code in results:
        att = attempts[a.sample]
        att.outputs.append(AgentOutput(a.role, a.turn, c.text, code, c.n_tokens, c.finish_reason,
                                       a.adapter, a.prompt.text, c.seconds, a.seed, c.token_ids))
        if a.role == "helper":
            att.helper_code = code
        else:
            att.main_code = code


def _program_text(attempt: Attempt) -> str:
    return attempt.program.text if attempt.program else ""


def feedback_text(verdict: Verdict, limit: int = 6) -> str:
    """What an agent is told about a run on the public examples."""
    if not verdict.syntax_ok:
        return f"SyntaxError: {verdict.detail or 'the program does not parse'}"
    if not verdict.runnable:
        return f"The program failed before any test ran: {verdict.detail or verdict.status}"
    lines = []
    for t in verdict.tests[:limit]:
        mark = "PASS" if t.passed else t.status.upper()
        msg = f" ({t.error_type}: {t.message})" if t.error_type else (f" ({t.message})" if t.message else "")
        lines.append(f"{mark}: {t.source.strip()}{msg if not t.passed else ''}")
    if verdict.n_tests > limit:
        lines.append(f"... {verdict.n_tests - limit} more; {verdict.n_passed}/{verdict.n_tests} passed")
    return "\n".join(lines)


def _drop_blocks(code: str, context: str) -> str:
    """Remove top-level blocks of `code` that appear verbatim in `context`."""
    if not context.strip():
        return code
    blocks = code.split("\n\n\n")
    kept = [b for b in blocks if b.strip() and b.strip() not in context]
    return "\n\n\n".join(b.strip("\n") for b in kept) + "\n" if kept else code


def main_calls_helper(main_code: str, helper_code: str) -> bool:
    """Whether the main code calls a function the helper defined (cooperation, not just glue)."""
    import ast

    try:
        helper_names = {
            n.name for n in ast.parse(helper_code).body
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        called = {
            n.func.id for n in ast.walk(ast.parse(main_code))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
    except SyntaxError:
        return False
    return bool(helper_names & called) and not any(defines(main_code, h) for h in helper_names & called)
