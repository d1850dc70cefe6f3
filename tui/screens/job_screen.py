"""What the Train and Bench screens share: one child-process job, followed on a worker."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Button, RichLog

from coopcode import Event, Failed, Log
from tui.jobs import ChildJob, describe_exit, summarize_argv
from tui.memory import available_bytes, memory_line, needs_bytes, record_job_peak
from tui.messages import JobEnded, JobEvent
from tui.widgets.ticks import TickBox


class JobScreen(Screen[None]):
    """A screen that runs at most one child job at a time and renders its events."""

    job_name = "job"

    def __init__(self) -> None:
        super().__init__()
        self.job: ChildJob | None = None
        self.run_id = 0
        self.released = False  # this job's start freed the TUI's model: reload it at the end

    def release_box(self) -> ComposeResult:
        """The form's 'free the TUI's model' box (see tui.memory)."""
        yield TickBox("free the TUI's model", compact=True, id="release")

    def memory_text(self) -> str:
        """What the TUI holds and what a job would add (tui.memory), for before a start."""
        session: Any = self.app.session  # type: ignore[attr-defined]
        return memory_line(self.job_name, session.baseline_rss, session.agents is not None)

    def propose_release(self) -> None:
        """Tick 'free the TUI's model' where the job would not fit in what is free."""
        session: Any = self.app.session  # type: ignore[attr-defined]
        need = needs_bytes(self.job_name, session.baseline_rss, session.agents is not None)
        if need and available_bytes() < 1.5 * need:
            self.query_one("#release", TickBox).value = True

    @property
    def log_view(self) -> RichLog:
        return self.query_one("#log", RichLog)

    @property
    def busy(self) -> bool:
        return self.job is not None and self.job.running

    def start_job(self, argv: list[str]) -> None:
        self.run_id += 1
        self.released = False
        if self.query("#release") and self.query_one("#release", TickBox).value:
            # One model in memory: the child's (a child cannot use the TUI's, tui.memory).
            self.released = self.app.release_agents(self.job_name)  # type: ignore[attr-defined]
        self.job = ChildJob(self.job_name, argv)
        self.log_view.write(f"$ {summarize_argv(argv)}")
        try:
            self.job.start()
        except OSError as e:
            self.log_view.write(f"cannot start: {e}")
            self.job = None
            return
        self.log_view.write(f"{self.job_name} started (pid {self.job.pid}); events: {self.job.events_path}")
        self._follow(self.job, self.run_id)
        self.job_started()

    @work(thread=True, group="follow")
    def _follow(self, job: ChildJob, run_id: int) -> None:
        def relay(event: Event) -> None:
            if not self.absorb(event):
                self.post_message(JobEvent(run_id, event))

        code = job.follow(relay)
        if not job.detached:  # waited for: its peak memory is known now
            record_job_peak(self.job_name)
        self.post_message(JobEnded(run_id, code, describe_exit(job, code)))

    def action_stop(self) -> None:
        if not self.busy:
            self.notify(f"No {self.job_name} is running.", severity="warning")
            return
        from tui.screens.dialogs import ConfirmDialog

        def confirmed(yes: bool | None) -> None:
            if yes and self.job is not None:
                self.log_view.write(f"stopping the {self.job_name}…")
                self._stop(self.job)

        self.app.push_screen(ConfirmDialog(f"Stop the {self.job_name}? (a rerun resumes it)"), confirmed)

    @work(thread=True, group="stop")
    def _stop(self, job: ChildJob) -> None:
        job.stop()  # blocks up to the grace period: never on the event loop

    def on_job_event(self, message: JobEvent) -> None:
        if message.run_id != self.run_id:
            return
        e = message.event
        if isinstance(e, Log):
            self.log_view.write(("warning: " if e.level == "warning" else "") + e.message)
        elif isinstance(e, Failed):
            self.log_view.write(f"error: {e.message}")
        self.handle_event(e)

    def on_job_ended(self, message: JobEnded) -> None:
        if message.run_id != self.run_id:
            return
        if self.released:
            self.released = False
            self.app.restore_agents()  # type: ignore[attr-defined]
        self.log_view.write(message.text)
        ok = message.returncode == 0
        self.notify(message.text, severity="information" if ok else "warning", title=self.job_name)
        self.job_ended(message.returncode)

    # -- for subclasses ---------------------------------------------------------------------

    def absorb(self, event: Event) -> bool:
        """On the follower thread: True when the event is taken here and not posted to the
        screen (token events come too fast to render one by one)."""
        return False

    def handle_event(self, event: Event) -> None:
        """Render one event of the running job."""

    def job_started(self) -> None:
        """The child is running: Start is off, Stop on."""
        self.show_running(True)

    def job_ended(self, returncode: int | None) -> None:
        """The child exited: Start is on again, Stop off."""
        self.show_running(False)

    def show_running(self, running: bool) -> None:
        self.query_one("#start", Button).disabled = running
        self.query_one("#stop", Button).disabled = not running


def eta_text(seconds: float | None) -> str:
    """`4m05s`, `12s`, or `?` when not known yet."""
    if seconds is None:
        return "?"
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"

