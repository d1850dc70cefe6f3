"""The screenshots of `coopcode tui`, saved by the running app (scripted agents, real process
sandbox). `make docs` draws them into the site at every build (docs/hooks.py); this command
writes the committed copies the README shows:

    .venv/bin/python docs/screenshots.py

Writes, at 120x34, docs/collaborate.svg (the program, each line marked by who wrote it, and
its tests), docs/collaborate-agents.svg (the two agents side by side) and
docs/collaborate-contract.svg (a `contract` pair on a compose problem: aux's contract between
the helper and main); at 80x24, docs/collaborate-80x24.svg and docs/bench-80x24.svg (a
committed run's samples, one opened); and, where `rsvg-convert` is installed, a PNG of each.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
LARGE, SMALL = (120, 34), (80, 24)
# A bench run the repository keeps, for the Bench screenshot (its samples are real).
RUN = REPO / "checkpoints" / "magrpo-credit-0.5b" / "validation" / "step-000060"
# A compose problem (all_prefixes(anti_shuffle(s)), compose:test) for the contract pair.
CONTRACT_TASK = "compose/all_prefixes_of_anti_shuffle"


WAIT_S = 60.0  # a screen that never reaches the state drawn fails the build, never hangs it


async def until(pilot: Any, ready: Callable[[], bool], what: str) -> None:
    """Pause the app until `ready()`, for at most WAIT_S."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"screenshots: the TUI did not show {what} within {WAIT_S:.0f} s")
        await pilot.pause(0.05)


async def render(out: Path = DOCS, tour: bool = False) -> list[Path]:
    """Draw every screenshot into `out`; the SVGs written. `tour`: also each screen as it
    opens, with its keys (screen_tour), as the docs build draws them."""
    import os
    import tempfile

    from sandbox import open_sandbox

    written = []
    with open_sandbox(backend="process") as sb, tempfile.TemporaryDirectory() as tmp:
        for size, names in ((LARGE, ("collaborate.svg", "collaborate-agents.svg")),
                            (SMALL, ("collaborate-80x24.svg", None))):
            written += await collaborate(sb, out, size, *names)
        written.append(await contract_pair(sb, out, LARGE, "collaborate-contract.svg"))
        # The Bench screenshot runs in a folder holding one committed run in runs/.
        (Path(tmp) / "runs").mkdir()
        (Path(tmp) / "runs" / "credit-step-60").symlink_to(RUN)
        here = os.getcwd()
        os.chdir(tmp)
        try:
            written.append(await bench(sb, out, SMALL, "bench-80x24.svg"))
            if tour:
                written += await screen_tour(sb, out, LARGE)
        finally:
            os.chdir(here)
    return written


SCREENS = ("agents", "collaborate", "train", "bench")


async def screen_tour(sb: object, out: Path, size: tuple[int, int]) -> list[Path]:
    """Each screen as it opens (screen-NAME.svg), and its keys as `?` lists them: written to
    `out/keys.json`, {screen: [[keys, what they do, where], ...]}, for the docs' TUI page."""
    from tui.screens.keys import screen_keys

    written, keys = [], {}
    for mode in SCREENS:
        app = make_app(sb, mode=mode, problem="HumanEval/0")
        async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
            await until(pilot, lambda: app.agents_state == "ready", "the agents ready")  # type: ignore[attr-defined]  # noqa: B023
            await pilot.pause(0.3)
            steady(app)
            written.append(Path(app.save_screenshot(f"screen-{mode}.svg", str(out))))  # type: ignore[attr-defined]
            keys[mode] = [list(row) for row in screen_keys(app.screen)]  # type: ignore[attr-defined]
    (out / "keys.json").write_text(json.dumps(keys, indent=1), encoding="utf-8")
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
        pane.refresh_title()


async def collaborate(sb: object, out: Path, size: tuple[int, int], name: str,
                      agents_name: str | None) -> list[Path]:
    app = make_app(sb, problem="HumanEval/0")
    written = []
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        screen = app.screen  # type: ignore[attr-defined]
        await until(pilot, lambda: app.agents_state == "ready" and bool(screen.problem),  # type: ignore[attr-defined]
                    "the agents ready")
        await pilot.press("ctrl+r")
        await until(pilot, lambda: screen.query_one("#tests").row_count > 0, "the tests run")
        steady(app)
        screen.query_one("#tests").focus()
        await pilot.pause(0.3)
        written.append(Path(app.save_screenshot(name, str(out))))  # type: ignore[attr-defined]
        if agents_name:
            await pilot.press("f8")
            await pilot.pause(0.3)
            written.append(Path(app.save_screenshot(agents_name, str(out))))  # type: ignore[attr-defined]
    return written


async def contract_pair(sb: object, out: Path, size: tuple[int, int], name: str) -> Path:
    """A `contract` pair paid with `own`, on the Agents tab: the problem's contract for aux
    between the helper (who saw only it) and main (who saw the task and it, not aux's body)."""
    app = make_app(sb, problem=CONTRACT_TASK)
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        screen = app.screen  # type: ignore[attr-defined]
        await until(pilot, lambda: app.agents_state == "ready" and bool(screen.problem),  # type: ignore[attr-defined]
                    "the agents ready")
        screen.query_one("#scheme").value = "contract"
        screen.query_one("#reward").value = "own"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "PASSED" in str(screen.query_one("#summary").render()),
                    "the contract pair's program passing")
        await pilot.press("f8")
        steady(app)
        await pilot.pause(0.3)
        return Path(app.save_screenshot(name, str(out)))  # type: ignore[attr-defined]


async def bench(sb: object, out: Path, size: tuple[int, int], name: str) -> Path:
    app = make_app(sb, mode="bench")
    async with app.run_test(size=size) as pilot:  # type: ignore[attr-defined]
        await pilot.press("f8")
        runs = app.screen.query_one("#runs")  # type: ignore[attr-defined]
        await until(pilot, lambda: runs.option_count > 0, "the committed run in the Runs tab")
        runs.focus()
        runs.highlighted = 0
        await pilot.press("f9", "down", "down", "f9")  # a sample's program, lines marked
        await pilot.pause(0.5)
        steady(app)
        return Path(app.save_screenshot(name, str(out)))  # type: ignore[attr-defined]


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
