"""At 80x24 nothing is cut so that it cannot be read: the toolbar keeps its
labels and the problem's whole name, the status keeps the sandbox's state, the program
editor shows main's code, the tests keep their message (what the program returned), the
problem list and the checkpoints table wrap long names instead of cutting them, and an
agent's pane ends on the code that went into the program (no stray `}`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coopcode import ScriptedEngine, load_problems
from tests.tui_app.conftest import wait_until
from tui.demo import scripted_answer
from tui.session import AgentsSpec
from tui.widgets.nav import fit_status

REPO = Path(__file__).resolve().parents[2]
PAIR = "compose-magrpo-0.5b"
LONGEST = max(load_problems("compose:all"), key=lambda p: len(p.task_id)).task_id


def wrong_and_untidy(prompt: str, adapter: str | None, index: int) -> str:
    """The demo pair, but main answers `False` always and leaves a stray `}` after its code
    (which the extraction drops from the program, as it drops a model's)."""
    answer = scripted_answer(prompt)
    if "You are the helper" in prompt:
        return answer
    code = "    return False\n" if "has_close_elements" in prompt else answer.split("```")[0]
    return code + "}\n```\nDone.\n"


@pytest.fixture
def pair(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> AgentsSpec:
    monkeypatch.setenv("COOPCODE_CHECKPOINTS", str(REPO / "checkpoints"))
    return AgentsSpec(sandbox="process", helper_adapter=str(REPO / "checkpoints" / PAIR / "helper"),
                      main_adapter=str(REPO / "checkpoints" / PAIR / "main"))


async def test_the_toolbar_keeps_its_labels_and_the_whole_name(make_app, pair):
    app = make_app(spec=pair, problem=LONGEST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await wait_until(pilot, lambda: screen.query_one("#scheme").value == "contract")
        await pilot.pause(0.2)
        label = screen.query_one("#problem-label")
        # The whole name, not `compose/all_p`; each setting with its label, not bare values.
        assert str(label.render()).strip() == LONGEST
        assert label.region.width >= len(LONGEST)
        words = [w for w in screen.query("#settings Label")]
        assert [str(w.render()).strip() for w in words] == ["scheme", "turns", "reward"]
        shown = [w for w in screen.query("#toolbar Label, #toolbar Select, #toolbar Button")
                 if w.display]
        assert all(w.region.width > 0 and w.region.right <= 80 for w in shown)
        regions = sorted((w.region for w in shown), key=lambda r: (r.y, r.x))
        assert all(not a.overlaps(b) for a, b in zip(regions, regions[1:]))
        # The status line keeps the adapters' run and the sandbox's state whole.
        status = str(screen.query_one("#nav-status").render())
        assert PAIR in status and "sandbox: process" in status


def test_a_long_status_gives_way_in_the_model_name_first():
    line = ("qwen2.5-coder-0.5b-instruct + compose-magrpo-0.5b-seed1 (helper+main) · "
            "sandbox: docker ")
    fitted = fit_status(line, 78)
    assert len(fitted) <= 78 and fitted.endswith("sandbox: docker")  # not `sandbox: doc…`
    assert "compose-magrpo-0.5b-seed1 (helper+main)" in fitted


async def test_the_program_shows_mains_code_and_the_tests_what_was_returned(make_app):
    app = make_app(engine=ScriptedEngine(wrong_and_untidy, chunk=8), problem="HumanEval/0")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        table = screen.query_one("#tests")
        await wait_until(pilot, lambda: table.row_count > 0, timeout=30)
        await pilot.pause(0.3)
        # Main's code is in the editor's view, not only the prompt's and the helper's lines.
        editor = screen.query_one("#program")
        attempt = screen.run.attempt
        first_main = editor.text.splitlines().index(attempt.main_code.splitlines()[0])
        top = int(editor.scroll_y)
        assert top <= first_main < top + editor.scrollable_content_region.height
        assert editor.scrollable_content_region.height >= 5
        # Every column in view, the message included, with the value returned.
        assert table.virtual_size.width <= table.scrollable_content_region.width + 1
        messages = [str(table.get_row_at(i)[3]) for i in range(table.row_count)]
        assert any("returned False" in " ".join(m.split()) for m in messages), messages
        # The pane ends on main's code as run, not a stray `}` the program never had.
        main_view = screen.query_one("#main-code")
        assert "}" not in main_view.text
        assert main_view.text.strip() == attempt.main_code.strip()


async def test_long_names_wrap_in_the_list_and_the_checkpoints(make_app, pair):
    app = make_app(spec=pair, problem=LONGEST)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        listing = screen.query_one("#problems")
        await wait_until(pilot, lambda: screen.problem and listing.wrap_width > 0)
        await pilot.pause(0.2)
        width = listing.wrap_width
        for i in range(listing.option_count):
            option = listing.get_option_at_index(i)
            if option.disabled:
                continue
            lines = str(option.prompt).split("\n")
            assert all(len(line) <= width for line in lines), lines
            # Whole: the lines joined again are the name, not `has_close_elemen…`.
            joined = "".join(line.strip() for line in lines)
            assert joined.endswith(listing.problem(option.id).entry_point), (joined, option.id)
        # Train's checkpoints: two runs that differ at the middle still read apart (cut
        # from the middle, both would read `magrpo-c….5b-seed1`).
        await pilot.press("f4")
        train = app.screen
        table = train.query_one("#checkpoints")
        await wait_until(pilot, lambda: table.row_count > 5)
        await pilot.pause(0.3)
        names = ["".join(part.strip() for part in str(table.get_row_at(i)[0]).split("\n"))
                 for i in range(table.row_count)]
        assert {"magrpo-credit-0.5b-seed1", "magrpo-coop-0.5b-seed1"} <= set(names), names
        assert table.virtual_size.width <= table.scrollable_content_region.width + 1


def test_the_drill_downs_list_wraps_a_long_task_id():
    from tui.screens.samples import sample_label

    record = {"task_id": LONGEST, "sample": 3, "scheme": "contract", "passed": True,
              "verdict": {"status": "passed", "n_passed": 6, "n_tests": 6}}
    lines = sample_label(record, 30).plain.split("\n")
    # Lines of the width given: the list would fold a longer one, cutting the id mid-word.
    assert all(len(line) <= 30 for line in lines), lines
    assert "".join("".join(lines).split()) == f"✓{LONGEST}#3contract6/6"  # whole
    assert lines[-1].strip() == "#3 contract 6/6"
