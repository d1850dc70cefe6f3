"""What the screens share: the loaded agents (one base model, two adapters) and the sandbox.

Loading is slow (seconds to a minute) and happens on worker threads; the screens only ever
read `Session.agents` / `Session.sandbox` after the load finished. Both loaders are
injectable so tests can use a scripted engine or a tiny model without touching the UI code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from coopcode import DEFAULT_MODEL, Agents, attach_adapters
from tui.collector import collect_all, paused_then_frozen

if TYPE_CHECKING:  # loading engines and the sandbox waits until a session needs them
    from coopcode import Engine, Sandbox

Progress = Callable[[str], None]
EngineFactory = Callable[[str | None, Progress], "Engine"]  # (model spec, progress)
SandboxOpener = Callable[[str, Progress], "Sandbox"]  # (backend, warn) -> an entered one


@dataclass(frozen=True)
class AgentsSpec:
    """What the user chose on the Agents screen (None: the default model / no adapter)."""

    model: str | None = None
    helper_adapter: str | None = None
    main_adapter: str | None = None
    sandbox: str = "auto"
    # The engine and its options as `coopcode tui` was given them (`--engine canned
    # --engine-option op=-`): the base is loaded with them, and the bench children get them.
    engine_args: tuple[str, ...] = ()

    def with_(self, **changes: Any) -> AgentsSpec:
        return replace(self, **changes)

    def same_agents(self, other: AgentsSpec) -> bool:
        """Whether loading `other` gives these agents (no model named is the default one)."""
        return (replace(self, model=self.model or DEFAULT_MODEL)
                == replace(other, model=other.model or DEFAULT_MODEL))


def default_engine_factory(model: str | None, progress: Progress) -> Engine:
    from coopcode import load_engine

    return load_engine(model, progress=progress)


def engine_factory_for(engine: str, options: dict[str, Any]) -> EngineFactory:
    """Loads the base with engine `engine` (a registered one included) and its options
    (`EngineConfig.kwargs()`)."""
    def load(model: str | None, progress: Progress) -> Engine:
        from coopcode import load_engine

        return load_engine(model, engine, progress=progress, **options)

    return load


def default_sandbox_opener(backend: str, warn: Progress) -> Sandbox:
    from coopcode import open_sandbox

    sb = open_sandbox(backend=backend, warn=warn)
    return sb.__enter__()


class Session:
    """The agents and the sandbox of one TUI session (thread-safe loading)."""

    def __init__(
        self,
        spec: AgentsSpec = AgentsSpec(),
        *,
        engine_factory: EngineFactory = default_engine_factory,
        sandbox_opener: SandboxOpener = default_sandbox_opener,
    ) -> None:
        self.spec = spec
        self.engine_factory, self.sandbox_opener = engine_factory, sandbox_opener
        self.agents: Agents | None = None
        self.sandbox: Sandbox | None = None
        self.sandbox_error: str = ""
        self._engine_model: str | None = None  # the spec.model the current engine was built for
        self._lock = threading.Lock()
        self.sandbox_ready = threading.Event()
        self._sandbox_lock = threading.Lock()
        self.lost = ""  # why the sandbox went down (it is reopened on the next run)
        from tui.memory import rss_bytes

        # Resident memory before any model: what the TUI holds beyond it is its model's.
        self.baseline_rss = rss_bytes()

    def load_agents(self, spec: AgentsSpec, progress: Progress) -> Agents:
        """Load (or reuse) the base model and put the chosen adapters on it.

        Changing only the adapters keeps the base in memory: one base, loaded once, shared by
        both agents. (`coopcode.open_agents` loads a new base and then `attach_adapters`: this
        keeps the loaded one, from `engine_factory`, and attaches the adapters the same way.)
        """
        from coopcode import check_adapter_folders

        # Both adapter folders first, each bad one named: never after seconds of loading.
        check_adapter_folders(spec.helper_adapter, spec.main_adapter)
        # The collector paused: a load's imports would start full passes that stall the UI.
        with self._lock, paused_then_frozen():
            engine = self.agents.engine if self.agents else None
            wanted = spec.model or DEFAULT_MODEL
            if engine is None or wanted != self._engine_model:
                if engine is not None:
                    progress("releasing the previous model")
                    self.agents = None
                    engine.close()
                    collect_all()  # its memory back before the next model takes its own
                progress(f"loading {spec.model or 'the default model'}")
                engine = self.engine_factory(spec.model, progress)
                self._engine_model = wanted
            agents = attach_adapters(engine, spec.helper_adapter, spec.main_adapter, progress)
            self.agents, self.spec = agents, spec
            return agents

    def release_agents(self) -> bool:
        """Free the base model (a job's child is about to load its own); False when none was
        loaded. The next `load_agents` loads it again."""
        with self._lock:
            agents, self.agents, self._engine_model = self.agents, None, None
        if agents is None:
            return False
        agents.engine.close()
        collect_all()  # the model's cycles are frozen with it (tui.collector)
        return True

    def open_sandbox(self, warn: Progress) -> Sandbox:
        """Open the sandbox once; later calls return the same one (or raise the same error)."""
        try:
            if self.sandbox is None and not self.sandbox_error:
                self.sandbox = self.sandbox_opener(self.spec.sandbox, warn)
        except Exception as e:  # noqa: BLE001 - any failure is shown to the user as one line
            self.sandbox_error = _first_line(e)
        finally:
            self.sandbox_ready.set()
        if self.sandbox is None:
            raise RuntimeError(self.sandbox_error or "no sandbox")
        return self.sandbox

    def wait_sandbox(self, timeout: float | None = None) -> Sandbox:
        """The sandbox, waiting for a load in progress; RuntimeError when it is unavailable.
        One that went down (`sandbox_lost`) is opened again here: SandboxUnavailable, one
        line, if its backend still does not answer."""
        from coopcode import SandboxUnavailable

        self.sandbox_ready.wait(timeout)
        with self._sandbox_lock:
            if self.sandbox is None and self.lost:
                try:
                    self.sandbox = self.sandbox_opener(self.spec.sandbox, lambda _m: None)
                except Exception as e:  # noqa: BLE001 - still down: one line, try again later
                    raise SandboxUnavailable(_first_line(e)) from None
                self.lost = ""
        if self.sandbox is None:
            raise RuntimeError(self.sandbox_error or "the sandbox is not open yet")
        return self.sandbox

    def sandbox_lost(self, sandbox: Sandbox, why: str) -> None:
        """`sandbox` went down for good (its pool gave up its workers): close it; the next
        `wait_sandbox` opens a new one."""
        with self._sandbox_lock:
            if self.sandbox is not sandbox:
                return  # already replaced
            self.sandbox, self.lost = None, why
        try:
            sandbox.close()
        except Exception:  # noqa: BLE001 - its backend is down: closing may fail, harmlessly
            pass

    def close(self) -> None:
        if self.sandbox is not None:
            try:
                self.sandbox.close()
            finally:
                self.sandbox = None
        if self.agents is not None:
            self.agents.engine.close()
            self.agents = None


def _first_line(e: BaseException) -> str:
    """An error as the one line the screens show."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__
