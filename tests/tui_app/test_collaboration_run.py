"""The Collaborate run's state on its own, without a screen: what each key and event moves it
to, and which streamed tokens are drawn."""

from __future__ import annotations

from coopcode import AttemptReady, TokenDelta, VerdictReady, load_problems
from tui.collaboration_run import CollaborationRun, RunState, Stream


def problem():
    return load_problems("humaneval:all")[0]


def delta(agent: str, text: str, turn: int = 1) -> TokenDelta:
    return TokenDelta(agent=agent, turn=turn, text=text, tokens=1)


def test_a_run_generates_then_tests_then_is_judged() -> None:
    run = CollaborationRun()
    assert run.state == RunState.IDLE and not run.busy
    order = run.start_generation(problem(), "sequential", None, "seed")
    assert (order.run_id, order.scheme, run.state) == (1, "sequential", RunState.GENERATING)
    assert run.generating and run.busy
    seconds = run.attempt_ready(AttemptReady(scheme="sequential", program="x = 1\n"))
    assert seconds is not None and seconds >= 0  # the Bench estimate's fallback
    assert run.testing and run.judged_scheme == "sequential"
    run.verdict_ready()
    assert run.state == RunState.JUDGED and not run.busy
    # Ctrl+G: the same problem judged again under a new run id.
    again = run.start_tests("own", "own")
    assert (again.run_id, again.problem, again.scheme, run.state) == (
        2, order.problem, "sequential", RunState.TESTING)
    run.sandbox_down()
    assert run.state == RunState.SANDBOX_DOWN and not run.busy


def test_cancel_stops_only_a_generation_and_only_once() -> None:
    run = CollaborationRun()
    assert not run.cancel()  # nothing to stop
    order = run.start_generation(problem(), "sequential", None, "seed")
    assert run.cancel() and order.cancel.is_set()
    assert not run.cancel()  # asked already
    run.cancelled()
    assert run.state == RunState.CANCELLED
    # The next run has a cancel of its own: the old worker's stays set.
    assert not run.start_generation(problem(), "sequential", None, "seed").cancel.is_set()


def test_tokens_of_an_earlier_run_are_dropped_and_an_agents_run_of_tokens_joined() -> None:
    run = CollaborationRun()
    old = run.start_generation(problem(), "sequential", None, "seed")
    new = run.start_generation(problem(), "sequential", None, "seed")
    for run_id, d in ((old.run_id, delta("helper", "stale")), (new.run_id, delta("helper", "def ")),
                      (new.run_id, delta("helper", "aux(")), (new.run_id, delta("main", "x")),
                      (new.run_id, delta("main", "y", turn=2))):
        run.add_delta(run_id, d)
    assert run.take_streams() == [Stream("helper", 1, "def aux(", 2), Stream("main", 1, "x", 1),
                                  Stream("main", 2, "y", 1)]
    assert run.take_streams() == []  # each token drawn once


def test_a_verdict_reads_the_cooperation_the_sandbox_found() -> None:
    run = CollaborationRun()
    run.start_generation(problem(), "sequential", None, "seed")
    run.attempt_ready(AttemptReady(helper_code="def aux(a, b):\n    return abs(a - b)\n",
                                   main_code="def has_close_elements(numbers, threshold):\n"
                                             "    return aux(1, 2) < threshold\n"))
    found = run.cooperation(VerdictReady(cooperation={"helper_solves": False,
                                                      "both_needed": True}))
    assert found.both_needed is True
