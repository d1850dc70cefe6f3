"""One agent's live output: code streaming in token by token, with tokens and tokens/s."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import TextArea


def code_theme(app: Any) -> str:
    """The editors' colours for the app's theme: light code on the light theme."""
    return "monokai" if app.current_theme.dark else "github_light"


def style_code(editor: TextArea) -> None:
    """Python highlighting (compiled on first use: ~0.1 s) in the theme's colours."""
    if editor.language is None:
        editor.language = "python"
    editor.theme = code_theme(editor.app)


class PaneState(StrEnum):
    """Where an agent's pane is; its title shows the value."""

    IDLE = "idle"  # nothing written in this run yet
    STREAMING = "streaming"  # tokens arriving
    DONE = "done"  # the agent's part is written
    CANCELLED = "cancelled"  # the run was cancelled while it wrote


class AgentPane(Vertical):
    """A read-only code view that grows as deltas arrive.

    Each delta says how many sampled tokens it covers (none for the code the prompt
    pre-filled), so the count shown is the model's tokens, not the deltas. The title is
    refreshed on a timer rather than per token: a title re-layout per token would cost more
    than the text itself.
    """

    def __init__(self, role: str, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="agent-pane")
        self.role = role
        self.text = ""
        self.tokens = 0
        self.started: float | None = None
        self.finished: float | None = None
        self.state = PaneState.IDLE
        self.turn = 0
        self.turn_start = 0  # where the current turn's text begins in `text`

    def compose(self) -> ComposeResult:
        # No language yet: compiling the highlight query costs ~0.1 s per editor, paid at the
        # first run instead of at start-up (see `reset`).
        yield TextArea("", read_only=True, soft_wrap=True, show_line_numbers=False,
                       id=f"{self.role}-code", classes="stream")

    def on_mount(self) -> None:
        self.set_interval(0.5, self.refresh_title)
        self.refresh_title()

    @property
    def code_view(self) -> TextArea:
        return self.query_one(TextArea)

    def reset(self) -> None:
        self.text, self.tokens, self.turn, self.turn_start = "", 0, 0, 0
        self.started = self.finished = None
        self.state = PaneState.IDLE
        view = self.code_view
        style_code(view)
        view.load_text("")
        self.refresh_title()

    def append(self, delta: str, turn: int = 1, tokens: int = 1) -> None:
        """Add text the model sampled as `tokens` tokens (the screen batches deltas per frame)."""
        if self.started is None:
            self.started = time.monotonic()
        self.state, self.finished = PaneState.STREAMING, None
        if turn != self.turn:
            # A turn starts: mark revision turns so the two versions read apart.
            head = f"\n# ── turn {turn} ──\n" if self.turn else ""
            self.turn = turn
            self.turn_start = len(self.text) + len(head)
            delta = head + delta
        self.text += delta
        self.tokens += tokens
        view = self.code_view
        view.insert(delta, view.document.end, maintain_selection_offset=False)
        view.scroll_end(animate=False)

    def show_final(self, code: str) -> None:
        """The last turn as the code that went into the program, where the model wrote more
        around it (a closing fence, a stray `}`): the pane shows what was run."""
        if self.started is None or not code.strip():
            return
        written = self.text[self.turn_start:]
        if written.strip() == code.strip():
            return
        self.text = self.text[:self.turn_start] + code.rstrip() + "\n"
        view = self.code_view
        view.load_text(self.text)
        view.scroll_end(animate=False)

    def finish(self, state: PaneState = PaneState.DONE) -> None:
        """The agent stopped writing: `state` says why (a pane that got no text stays idle,
        unless the run was cancelled)."""
        self.finished = time.monotonic()
        written = self.started is not None or state == PaneState.CANCELLED
        self.state = state if written else PaneState.IDLE
        self.refresh_title()

    @property
    def tokens_per_s(self) -> float:
        if self.started is None:
            return 0.0
        end = self.finished if self.finished is not None else time.monotonic()
        return self.tokens / max(end - self.started, 1e-3)

    def refresh_title(self) -> None:
        """The title says the state; the subtitle the tokens and their rate."""
        if self.state == PaneState.IDLE:
            self.border_title = f"{self.role}"
            self.border_subtitle = ""
            return
        self.border_title = f"{self.role} · {self.state}"
        self.border_subtitle = f"{self.tokens} tok · {self.tokens_per_s:.1f} tok/s"
