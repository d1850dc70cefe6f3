"""The schemes with a contract for aux in the TUI: a `contract` pair on a compose
problem with the contract between the helper's and main's panes, `plan`'s contract streaming
in as main writes it, the refusal of `contract` on a problem without one, and the Bench and
Train forms offering the schemes, the compose sets and the `own` reward.

The agents are the scripted demo pair (`tui.demo`: a compose problem's helper implements
the contract it is shown, main calls aux); every program runs in the real process sandbox.
"""

from __future__ import annotations

from typing import Any

from coopcode import load_problems
from coopcode.core import events as ev
from coopcode.schemes.contracts import contract_stub
from tests.tui_app.conftest import SteppedEngine, wait_until
from tests.tui_app.test_config_forms import parsed
from tui.demo import scripted_answer
from tui.widgets.agent_pane import AgentPane
from tui.widgets.contract_pane import ContractPane
from tui.widgets.results import TestsTable

TASK = "compose/all_prefixes_of_anti_shuffle"  # all_prefixes(anti_shuffle(s)), compose:test


def summary_text(screen: Any) -> str:
    return str(screen.query_one("#summary").render())


async def test_a_contract_pair_runs_to_its_verdict_with_the_contract_between_the_panes(make_app):
    problem = next(p for p in load_problems("compose:test") if p.task_id == TASK)
    app = make_app()
    async with app.run_test(size=(120, 34)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.humaneval and app.agents_state == "ready",
                         what="the problems and the agents")
        # The compose problems are in the list, under their split: searched and picked by keys.
        screen.query_one("#search").focus()
        await pilot.press(*"prefixes_of_anti", "enter", "enter")
        await wait_until(pilot, lambda: screen.problem is not None, what="a problem picked")
        assert screen.problem.task_id == TASK
        listing = screen.query_one("#problems")
        headings = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)
                    if listing.get_option_at_index(i).disabled]
        assert any(h.startswith("compose:test") for h in headings), headings
        # `main sees` is offered only where the scheme has a choice.
        assert not screen.query_one("#sees").display
        screen.query_one("#scheme").value = "contract"
        screen.query_one("#reward").value = "own"
        await pilot.pause()
        assert screen.query_one("#sees").display
        # Before the run: the problem's contract (signature, docstring, `...`) between the panes.
        await pilot.press("f8")
        contract = screen.query_one("#contract-pane", ContractPane)
        helper, main = (screen.query_one(f"#{r}-pane", AgentPane) for r in ("helper", "main"))
        await wait_until(pilot, lambda: contract.display and contract.region.width > 0)
        assert contract.code_view.text == contract_stub(problem.contract)
        assert "the problem's" in str(contract.border_title)
        assert helper.region.right <= contract.region.x < contract.region.right <= main.region.x

        await pilot.press("ctrl+r")
        table = screen.query_one("#tests", TestsTable)
        await wait_until(pilot, lambda: "PASSED" in summary_text(screen), timeout=30,
                         what="the verdict")
        assert table.row_count == 6
        assert screen.run.scheme == "contract"
        # The helper implemented the contract it was shown; main called aux without its body.
        assert helper.text.startswith(problem.contract.signature)
        assert "aux(" in main.text and "def aux" not in main.text
        assert contract.code_view.text == contract_stub(problem.contract)
        text = " ".join(summary_text(screen).split())
        assert "PASSED 6/6 tests · both needed" in text
        # Each agent on its own, its own reward first (`own` pays each agent its own).
        assert "reward (own) 2.20" in text
        assert "helper 1.10: parses · aux's tests 100% · alone: fails" in text
        assert "main 1.10: parses · with the reference aux 100% · with a stub helper: fails" in text
        assert "cooperation main calls aux once" in text

        # main sees code: the scheme's +code variant, main shown the helper's code.
        screen.query_one("#sees").value = "code"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.run.scheme == "contract+code"
                         and "PASSED" in summary_text(screen), timeout=30, what="contract+code")


async def test_the_contract_sits_between_stacked_panes_at_80x24(make_app):
    app = make_app(problem=TASK)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        screen.query_one("#scheme").value = "contract"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: "PASSED" in summary_text(screen), timeout=30)
        await pilot.press("f8")
        panes = [screen.query_one(f"#{name}-pane") for name in ("helper", "contract", "main")]
        await wait_until(pilot, lambda: all(p.region.height for p in panes))
        # Stacked, each at the full width, the contract between the helper and main.
        assert panes[0].region.bottom <= panes[1].region.y < panes[1].region.bottom <= panes[2].region.y
        assert {p.region.width for p in panes} == {80}
        assert all(p.region.height >= 5 for p in panes)  # a border and 3 lines at least
        assert screen.query_one("#contract-code").text.startswith("def aux(s):")


async def test_plan_streams_the_planners_contract_between_the_panes(make_app):
    engine = SteppedEngine(lambda prompt, _a, _i: scripted_answer(prompt), chunk=4)
    app = make_app(engine, problem="HumanEval/0")
    async with app.run_test(size=(120, 34)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        screen.query_one("#scheme").value = "plan"
        await pilot.press("ctrl+r")
        contract = screen.query_one("#contract-pane", ContractPane)
        helper, main = (screen.query_one(f"#{r}-pane", AgentPane) for r in ("helper", "main"))
        await wait_until(pilot, lambda: screen.query_one("#tabs").active == "tab-agents")
        # Main writes aux's contract first (its answer pre-filled with `def aux(`): it streams
        # in between the panes, chunk by chunk, before either agent writes a line.
        await wait_until(pilot, lambda: contract.text == "def aux(", what="the pre-filled start")
        assert contract.display and contract.tokens == 0
        for n in range(1, 6):
            engine.gate.release()
            await wait_until(pilot, lambda n=n: contract.tokens == n, what=f"planner chunk {n}")
            assert contract.state == "streaming" and "main's plan" in str(contract.border_title)
            assert helper.text == "" and main.text == ""
        assert contract.text.startswith("def aux(a: float, b: float)")
        for _ in range(200):
            engine.gate.release()
        await wait_until(pilot, lambda: "PASSED" in summary_text(screen), timeout=30)
        assert contract.state == "done"
        # After the run: the contract as main saw it, its body `...`; the helper implemented it.
        assert contract.code_view.text.startswith("def aux(a: float, b: float) -> float:")
        assert contract.code_view.text.rstrip().endswith("...")
        assert "return abs(a - b)" in helper.text and "aux(a, b)" in main.text
        text = " ".join(summary_text(screen).split())
        assert "both needed" in text and "helper: parses · alone: fails" in text


async def test_contract_on_a_problem_without_one_is_refused_in_one_line(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        shown: list[tuple[str, str]] = []
        screen.notify = lambda message, **kw: shown.append((message, kw.get("severity", "")))
        screen.query_one("#scheme").value = "contract"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: shown, what="the refusal")
        await pilot.pause(0.2)
        assert shown == [("the contract scheme needs a contract for aux, and HumanEval/0 has "
                          "none: pick a compose problem (type compose in the search) or choose "
                          "the plan scheme", "error")]
        assert not screen.run.generating and screen.run.run_id == 0  # nothing started
        assert screen.query_one("#tabs").active == "tab-problem"
        # The pane between the agents says the same before any run.
        await pilot.press("f8")
        assert "HumanEval/0: no contract for aux" in screen.query_one("#contract-code").text
        # plan needs none: the same problem runs.
        screen.query_one("#scheme").value = "plan"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: "PASSED" in summary_text(screen), timeout=30)


async def test_bench_and_train_forms_offer_the_schemes_the_compose_sets_and_own(make_app):
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        shown: list[str] = []
        screen.notify = lambda message, **_kw: shown.append(message)
        split = screen.query_one("#split")
        for name in ("compose:train", "compose:val", "compose:all", "humaneval:test"):
            split.value = name  # an option of the Select (else InvalidSelectValueError)
        schemes = screen.query_one("#schemes")
        offered = {str(schemes.get_option_at_index(i).value) for i in range(schemes.option_count)}
        assert {"contract", "contract+code", "plan", "plan+code"} <= offered
        # Ticking contract on HumanEval moves the problems to compose's split, and says so.
        schemes.deselect("sequential")
        schemes.select("contract")
        await wait_until(pilot, lambda: split.value == "compose:test", what="compose offered")
        assert shown and "compose:test" in shown[-1]
        screen.query_one("#reward").value = "own"
        config = parsed(screen.build_argv()[0])
        assert (config.problems, config.schemes, config.reward) == ("compose:test", ("contract",), "own")
        # Put back on HumanEval, the start is refused in one line.
        split.value = "humaneval:test"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: "have none" in shown[-1], what="the refusal")
        assert "the contract scheme needs a contract for aux, and 40 of 40 problems have none" \
            in shown[-1] and screen.job is None

        await pilot.press("f4")
        await wait_until(pilot, lambda: app.current_mode == "train")
        train = app.screen
        train.notify = lambda message, **_kw: shown.append(message)
        train.query_one("#scheme").value = "contract"
        await wait_until(pilot, lambda: train.query_one("#problems").value == "compose:train")
        train.query_one("#reward").value = "own"
        config = parsed(train.build_argv())
        assert (config.problems, config.scheme, config.reward) == ("compose:train", "contract", "own")
        train.query_one("#scheme").value = "plan"
        train.query_one("#problems").value = "humaneval:train"  # plan needs no contract
        assert parsed(train.build_argv()).scheme == "plan"


async def test_the_bench_table_shows_both_needed_with_a_pairs_cooperation(make_app):
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        from tui.widgets.scores import LiveScores

        screen.live = LiveScores([1], 2)
        pair = {"own_work_rate": 0.5, "helper_solves_rate": 0.0, "cooperation": {"decorator": 1.0},
                "pass@1": 0.5, "acc@1": 0.6, "problems": 2}
        screen.handle_event(ev.Finished(job="bench", summary={"ks": [1], "rows": [
            {"method": "contract", **pair, "both_needed_rate": 0.5},
            {"method": "plan", **pair, "both_needed_rate": None}]}))
        await pilot.pause()
        text = str(screen.query_one("#bench-patterns").render())
        assert "contract: own work 50% · helper alone solves 0% · both needed 50% of passing" in text
        assert "plan: own work 50%" in text and "both needed: no passing sample" in text


async def test_a_contract_runs_samples_say_both_needed_and_each_agent(make_app, workdir,
                                                                       process_sandbox):
    # A real bench of the scripted pair (contract, own) on one compose problem, opened
    # sample by sample (Bench, F9).
    from coopcode.evaluation.bench import BenchConfig, run_bench
    from tui.demo import demo_engine
    from tui.screens.samples import SamplesScreen

    problems = [p for p in load_problems("compose:test") if p.task_id == TASK]
    out = workdir / "runs" / "contract-own"
    run_bench(BenchConfig(problems="compose:test", schemes=("contract",), ks=(1,), n=1,
                          reward="own"), problems, demo_engine(delay=0.0), process_sandbox, out)
    app = make_app(mode="bench", autoload=False)
    async with app.run_test(size=(100, 30)) as pilot:
        app.push_screen(SamplesScreen(out))
        await wait_until(pilot, lambda: isinstance(app.screen, SamplesScreen))
        await pilot.press("f10")
        text = " ".join(str(app.screen.query_one("#sample-summary").render()).split())
        assert "PASSED 6/6 tests · both needed" in text
        assert "helper: parses · aux's tests 100% · alone: fails" in text
        assert "main: parses · with the reference aux 100% · with a stub helper: fails" in text
