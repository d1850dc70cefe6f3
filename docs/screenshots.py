"""Render the README screenshots of `coopcode tui` (scripted agents, real process sandbox).

    .venv/bin/python docs/screenshots.py

Writes docs/collaborate.svg (the program and its tests), docs/collaborate-agents.svg (the two
agents side by side) and, where `rsvg-convert` is installed, a PNG of each.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SIZE = (110, 32)


async def render() -> list[Path]:
    from sandbox import open_sandbox
    from tui.app import CoopApp
    from tui.demo import demo_engine
    from tui.session import AgentsSpec, Session

    written = []
    with open_sandbox(backend="process") as sb:
        session = Session(AgentsSpec(sandbox="process"),
                          engine_factory=lambda _m, _p: demo_engine(delay=0.0),
                          sandbox_opener=lambda _b, _w: sb)
        app = CoopApp(session, problem="HumanEval/0")
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            while not (app.agents_state == "ready" and screen.problem):
                await pilot.pause(0.05)
            await pilot.press("ctrl+r")
            while screen.query_one("#tests").row_count == 0:
                await pilot.pause(0.05)
            for widget in screen.query("TextArea, Input"):
                widget.cursor_blink = False
            for pane in screen.query(".agent-pane"):
                pane.started, pane.finished = 0.0, pane.tokens / 14.5  # the 0.5B model's rate
                pane._refresh_title()
            screen.query_one("#tests").focus()
            await pilot.pause(0.2)
            written.append(Path(app.save_screenshot("collaborate.svg", str(DOCS))))
            screen.query_one("#tabs").active = "tab-agents"
            await pilot.pause(0.2)
            written.append(Path(app.save_screenshot("collaborate-agents.svg", str(DOCS))))
    return written


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
