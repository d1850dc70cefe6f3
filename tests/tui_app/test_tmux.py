"""End to end in a real terminal: tmux runs `coopcode tui`, keys go in, the pane is read back.

The agents are the scripted demo pair (`--scripted`) so the run is fast and its code known;
the program runs in the real process sandbox.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

COOPCODE = Path(sys.executable).with_name("coopcode")


class Tmux:
    """One tmux server of its own per test (its own socket, `-L`).

    A shared server exits when its last session is killed; a test starting the next
    session while the last one's server was still going down got "server exited
    unexpectedly" (CI saw that). A server per test has nothing to race with.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, *args], check=True,
                              capture_output=True, text=True).stdout

    def capture(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", self.name, *keys)

    def wait_for(self, text: str, *more: str, timeout: float = 30.0) -> str:
        """The first capture that holds every one of the texts.

        Waiting for all of them at once matters: a capture can fall between the writes of
        one frame, and a modal's title can be painted before its body (CI saw that).
        """
        texts = (text, *more)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.capture()
            if all(t in screen for t in texts):
                return screen
            time.sleep(0.02)
        raise AssertionError(f"{texts!r} never all appeared; the pane shows:\n{self.capture()}")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-L", self.name, "has-session", "-t", self.name],
                              capture_output=True).returncode == 0


@pytest.fixture
def tmux(request: pytest.FixtureRequest):
    session = Tmux(f"coopcode-test-{os.getpid()}-{request.node.name[:40]}")
    yield session
    if session.alive():
        session.run("kill-server")


def test_tui_in_tmux_streams_code_and_shows_test_results(tmux: Tmux, tmp_path: Path):
    command = (f"cd {tmp_path} && COOPCODE_CACHE={tmp_path / 'cache'} {COOPCODE} tui --scripted "
               f"--sandbox process --problem HumanEval/0; echo EXITED $?; sleep 30")
    started = time.monotonic()
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "80", "-y", "24", command)
    tmux.wait_for("F3 Collaborate", timeout=30)
    first_frame = time.monotonic() - started
    tmux.wait_for("HumanEval 164", "has_close_", timeout=30)  # names wrap at `_` when narrow
    tmux.wait_for("scripted-demo", timeout=30)  # the agents are loaded
    print(f"first frame after {first_frame:.2f}s")
    tmux.keys("C-r")
    # The agents' code appears in their panes while they write...
    streaming = tmux.wait_for("helper ·", timeout=30)
    assert "def aux(" in tmux.wait_for("def aux(", timeout=30) or "def aux(" in streaming
    # ...then the combined program and the sandbox's verdict on the hidden tests.
    # The program scrolled to main's code: at 80x24 the imports and aux fill the view.
    screen = tmux.wait_for("PASSED", "7/7 tests", "if aux(a, b) < threshold:",
                           "assert candidate([1.0, 2.0", "aux inside a loop", timeout=60)
    assert "7/7 tests" in screen
    assert "M│" in screen and "def has_close_elements(" in screen
    # At 80x24 four rows of tests show under main's code (the rest scroll: Tab, then ↓).
    assert screen.count("passed") >= 4
    assert "assert candidate([1.0, 2.0" in screen  # the tests themselves, not just a count
    assert "aux inside a loop" in screen  # the cooperation pattern
    pressed = time.monotonic()
    tmux.keys("C-q")
    screen = tmux.wait_for("EXITED", timeout=15)  # the process is gone, not just the window
    took = time.monotonic() - pressed
    print(f"Ctrl+Q to the shell prompt: {took:.2f}s")
    assert "EXITED 0" in screen and "F3 Collaborate" not in screen
    # Within a second on an idle machine (0.4-0.5 s measured, loaded, with the real model);
    # the bound leaves room for a loaded CI neighbour.
    assert took < 3.0, f"Ctrl+Q took {took:.1f}s"


def test_the_main_flow_by_keys_alone_shows_the_run_and_its_verdict(tmux: Tmux, tmp_path: Path):
    # The main flow by keys alone: type to search, Enter, Enter, Ctrl+R; the run stays in
    # view through to its verdict (not hidden behind the Problem tab the list was on).
    command = (f"cd {tmp_path} && COOPCODE_CACHE={tmp_path / 'cache'} {COOPCODE} tui --scripted "
               f"--sandbox process; sleep 30")
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "80", "-y", "24", command)
    tmux.wait_for("scripted-demo", timeout=30)  # the agents are loaded
    tmux.wait_for("HumanEval 164", "has_close_", timeout=30)  # the problem list is filled
    # The focus starts in the search box: typing searches at once.
    tmux.keys("s", "t", "r", "l", "e", "n")
    tmux.wait_for("23 strlen", timeout=15)
    tmux.keys("Enter")
    time.sleep(0.3)
    tmux.keys("Enter")
    tmux.wait_for("HumanEval/23", timeout=15)
    tmux.keys("C-r")
    screen = tmux.wait_for("tests", timeout=60)
    screen = tmux.wait_for("reward (seed)", "F9 Program", "candidate(", timeout=60)
    assert "F9 Program" in screen and "candidate(" in screen  # the verdict and its tests
    # `?`: every key of the screen, over it; Esc closes.
    tmux.keys("?")
    screen = tmux.wait_for("Keys · Collaborate", "Ctrl+G", timeout=15)
    # At 80x24 the list is taller than the overlay and F9 is below its border: PgDn scrolls
    # it into view (the test passed by chance before, on a frame caught mid-paint).
    tmux.keys("PageDown")
    screen = tmux.wait_for("F9 ", "The Program tab: the combined", timeout=15)
    tmux.keys("End")  # ...and End shows the last rows and the caption
    tmux.wait_for("in an editor: leave it", "Esc, ? or q closes", timeout=15)
    tmux.keys("Escape")
    deadline = time.monotonic() + 10
    while "Esc, ? or q closes" in tmux.capture() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "Esc, ? or q closes" not in tmux.capture()
    tmux.wait_for("F9 Program", timeout=10)  # the screen under it is back


def test_a_trained_pair_by_name_from_another_folder_reaches_its_verdict_with_no_dead_key(
        tmux: Tmux, tmp_path: Path):
    """At 80x24, from a folder outside the repository, the contract pair
    named once; its scheme and reward are the defaults; the search, the run, every screen's
    F-key (from the program editor too), `/` back to the search and the palette all answer."""
    repo = Path(__file__).resolve().parents[2]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    command = (f"cd {elsewhere} && COOPCODE_CACHE={tmp_path / 'cache'} "
               f"COOPCODE_CHECKPOINTS={repo / 'checkpoints'} {COOPCODE} tui --scripted "
               "--sandbox process --adapters compose-magrpo-0.5b; sleep 30")
    tmux.run("new-session", "-d", "-s", tmux.name, "-x", "80", "-y", "24", command)
    screen = tmux.wait_for("compose-magrpo-0.5b (helper+main)", "sandbox: process", timeout=30)
    screen = tmux.wait_for("scheme contract", "reward own", timeout=15)  # the pair's, labelled
    # the problem list is filled (its names wrap at `_` where the column is narrow)
    tmux.wait_for("HumanEval 164", "has_close_", timeout=30)
    tmux.keys(*"prefixes_of_anti")  # typed at once: the search box has the focus
    tmux.wait_for("all_prefixes_of_anti_", "1 of 88", timeout=15)
    tmux.keys("Enter")
    time.sleep(0.3)
    tmux.keys("Enter")
    tmux.wait_for("compose/all_prefixes_of_anti_shuffle", timeout=15)
    tmux.keys("C-r")
    screen = tmux.wait_for("PASSED", "reward (own)", "M│", timeout=60)  # main's code in view
    # Every F-key from the program editor (Shift+Tab from the tests into it).
    tmux.keys("BTab")
    time.sleep(0.3)
    for key, seen in (("F5", "F7 Live"), ("F4", "start from"), ("F2", "Trained run"),
                      ("F3", "combined program")):
        tmux.keys(key)
        tmux.wait_for(seen, timeout=15)
        if key != "F3":
            tmux.keys("F3")
            tmux.wait_for("combined program", timeout=15)
            tmux.keys("F9")
            time.sleep(0.2)
            tmux.keys("BTab")  # back into the editor for the next key
            time.sleep(0.3)
    # Bench follows the pair: its split and scheme; `/` from there is the search box again.
    tmux.keys("F5")
    screen = tmux.wait_for("F7 Live", "agents     as loaded", timeout=15)
    assert "problems   compose:test" in screen and "[X] contract" in screen.replace("▐X▌", "[X]")
    tmux.keys("/")
    tmux.wait_for("F7 Problem", timeout=15)
    tmux.keys(*"below")
    tmux.wait_for("below_zero", timeout=15)
    # The palette names the search with its key.
    tmux.keys("C-p")
    tmux.wait_for("Search for commands", timeout=15)
    tmux.keys(*"search prob")
    tmux.wait_for("Search problems (/)", timeout=15)
    tmux.keys("Escape")
    tmux.keys("C-q")
