"""Render the README screenshots of `coopcode tui` (scripted agents, real process sandbox).

    .venv/bin/python docs/screenshots.py

Writes, at 120x34, docs/collaborate.svg (the program, each line marked by who wrote it, and
its tests), docs/collaborate-agents.svg (the two agents side by side) and
docs/collaborate-contract.svg (a `contract` pair on a compose problem: aux's contract between
the helper and main); at 80x24, docs/collaborate-80x24.svg and docs/bench-80x24.svg (a
committed run's samples, one opened); and, where `rsvg-convert` is installed, a PNG of each.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
LARGE, SMALL = (120, 34), (80, 24)
# A bench run the repository keeps, for the Bench screenshot (its samples are real).
RUN = REPO / "checkpoints" / "magrpo-credit-0.5b" / "validation" / "step-000060"
# A compose problem (all_prefixes(anti_shuffle(s)), compose:test) for the contract pair.
CONTRACT_TASK = "compose/all_prefixes_of_anti_shuffle"


async def render() -> list[Path]:
    import os
    import tempfile

    from sandbox import open_sandbox

    written = []
    with open_sandbox(backend="process") as sb, tempfile.TemporaryDirectory() as tmp:
        for size, names in ((LARGE, ("collaborate.svg", "collaborate-agents.svg")),
                            (SMALL, ("collaborate-80x24.svg", None))):
            written += await collaborate(sb, size, *names)
        written.append(await contract_pair(sb, LARGE, "collaborate-contract.svg"))
        # The Bench screenshot runs in a folder holding one committed run in runs/.
        (Path(tmp) / "runs").mkdir()
        (Path(tmp) / "runs" / "credit-step-60").symlink_to(RUN)
        here = os.getcwd()
        os.chdir(tmp)
        try:
            written.append(await bench(sb, SMALL, "bench-80x24.svg"))
        finally:
            os.chdir(here)
    return written


def make_app(sb: object, **kw: object) -> object:
    from tui.app import CoopApp
    from tui.demo import demo_engine
    from tui.session import AgentsSpec, Session

    session = Session(AgentsSpec(sandbox="process"),
                      engine_factory=lambda _m, _p: demo_engine(delay=0.0),
                      sandbox_opener=lambda _b, _w: sb)
    return CoopApp(session, **kw)  # type: ignore[arg-type]


def steady(app: object) -> None:
    for widget in app.screen.query("TextArea, Input"):  # type: ignore[attr-defined]
        widget.cursor_blink = False
    for pane in app.screen.query(".agent-pane"):  # type: ignore[attr-defined]
        pane.started, pane.finished = 0.0, pane.tokens / 14.5  # the 0.5B model's rate
        pane._refresh_title()


async def collaborate(sb: object, size: tuple[int, int], name: str,
                      agents_name: str | None) -> list[Path]:
    app = make_app(sb, problem="HumanEval/0")
    written = []
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        screen = app.screen  # type: ignore[attr-defined]
        while not (app.agents_state == "ready" and screen.problem):  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        await pilot.press("ctrl+r")
        while screen.query_one("#tests").row_count == 0:
            await pilot.pause(0.05)
        steady(app)
        screen.query_one("#tests").focus()
        await pilot.pause(0.3)
        written.append(Path(app.save_screenshot(name, str(DOCS))))  # type: ignore[attr-defined]
        if agents_name:
            await pilot.press("f8")
            await pilot.pause(0.3)
            written.append(Path(app.save_screenshot(agents_name, str(DOCS))))  # type: ignore[attr-defined]
    return written


async def contract_pair(sb: object, size: tuple[int, int], name: str) -> Path:
    """A `contract` pair paid with `own`, on the Agents tab: the problem's contract for aux
    between the helper (who saw only it) and main (who saw the task and it, not aux's body)."""
    app = make_app(sb, problem=CONTRACT_TASK)
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        screen = app.screen  # type: ignore[attr-defined]
        while not (app.agents_state == "ready" and screen.problem):  # type: ignore[attr-defined]
            await pilot.pause(0.05)
        screen.query_one("#scheme").value = "contract"
        screen.query_one("#reward").value = "own"
        await pilot.press("ctrl+r")
        while "PASSED" not in str(screen.query_one("#summary").render()):
            await pilot.pause(0.05)
        await pilot.press("f8")
        steady(app)
        await pilot.pause(0.3)
        return Path(app.save_screenshot(name, str(DOCS)))  # type: ignore[attr-defined]


async def bench(sb: object, size: tuple[int, int], name: str) -> Path:
    app = make_app(sb, mode="bench")
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        await pilot.press("f8")
        runs = app.screen.query_one("#runs")  # type: ignore[attr-defined]
        while runs.option_count == 0:
            await pilot.pause(0.05)
        runs.focus()
        runs.highlighted = 0
        await pilot.press("f9", "down", "down", "f9")  # a sample's program, lines marked
        await pilot.pause(0.5)
        steady(app)
        return Path(app.save_screenshot(name, str(DOCS)))  # type: ignore[attr-defined]


def to_png(svg: Path) -> Path:
    """PNG through rsvg-convert, which drops the leading no-break spaces of Textual's text
    runs (code then reads `fromtyping`): feed it plain spaces kept with xml:space."""
    text = svg.read_text().replace("&#160;", " ").replace("<svg ", '<svg xml:space="preserve" ', 1)
    png = svg.with_suffix(".png")
    subprocess.run(["rsvg-convert", "-w", "1400", "-o", str(png)], input=text.encode(), check=True)
    return png


def main() -> None:
    for svg in asyncio.run(render()):
        print(svg)
        if shutil.which("rsvg-convert"):
            print(to_png(svg))


if __name__ == "__main__":
    main()
