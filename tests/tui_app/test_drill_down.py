"""From a bench result to one sample: what the helper and main wrote, the program
with each line marked by who wrote it, and the verdict; the same marks in Collaborate."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from tests.tui_app.conftest import wait_until
from tui.screens.samples import SamplesScreen, read_samples
from tui.widgets.marked_program import line_authors

REPO = Path(__file__).resolve().parents[2]
# A real bench run the repository keeps (a credit run's validation at step 60, gzipped).
RUN = REPO / "checkpoints" / "magrpo-credit-0.5b" / "validation" / "step-000060"


async def test_drill_down_from_a_run_to_one_sample(make_app, workdir: Path):
    (workdir / "runs").mkdir()
    (workdir / "runs" / "credit-60").symlink_to(RUN)
    records = read_samples(RUN)
    assert records, "the committed run holds samples"
    first = records[0]
    app = make_app(mode="bench")
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        await pilot.press("f8")
        runs = screen.query_one("#runs")
        await wait_until(pilot, lambda: runs.option_count == 1)
        runs.focus()
        runs.highlighted = 0
        await pilot.press("f9")
        await wait_until(pilot, lambda: isinstance(app.screen, SamplesScreen))
        samples = app.screen
        listing = samples.query_one("#sample-list")
        assert listing.option_count == len(records)
        assert str(listing.get_option_at_index(0).prompt).split()[1] == first["task_id"]
        helper = samples.query_one("#sample-helper-code").content.code  # the rich Syntax shown
        assert helper.strip() == first["helper_code"].strip()
        await pilot.press("f9")  # the program, each line marked
        marked = samples.query_one("#sample-marked")
        authors = line_authors(first["program"], first["helper_code"], first["main_code"])
        assert {"helper", "main"} <= set(authors)
        await pilot.press("f10")
        summary = str(samples.query_one("#sample-summary").render())
        assert f"reward ({first['reward_name']})" in summary
        assert samples.query_one("#sample-tests").row_count == first["verdict"]["n_tests"]
        # Another sample, by the list.
        await pilot.press("down")
        await wait_until(pilot, lambda: str(samples.query_one("#sample-summary").render())
                         != summary or records[1]["verdict"] == first["verdict"])
        assert marked is not None
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is screen)


async def test_collaborate_marks_each_program_line_with_its_author(make_app):
    app = make_app(problem="HumanEval/0")
    async with app.run_test(size=(100, 34)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: app.agents_state == "ready" and screen.problem)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: screen.query_one("#tests").row_count > 0)
        await pilot.pause(0.2)
        marks = str(screen.query_one("#program-marks").render()).split("\n")
        editor = screen.query_one("#program", TextArea)
        lines = editor.text.splitlines()
        shown = dict(zip(lines, marks, strict=False))
        assert shown["from typing import List"] == "·"
        assert shown["def aux(a: float, b: float) -> float:"] == "H"
        assert shown["def has_close_elements(numbers: List[float], threshold: float) -> bool:"] == "M"
        # An edit is marked as the user's.
        editor.load_text(editor.text.replace("    return abs(a - b)", "    return abs(b - a)"))
        await pilot.pause(0.2)
        marks = str(screen.query_one("#program-marks").render()).split("\n")
        edited = editor.text.splitlines().index("    return abs(b - a)")
        assert marks[edited] == "✎"
