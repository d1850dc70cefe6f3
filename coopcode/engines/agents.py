"""The agents on an engine: the base model loaded once, each agent's adapter on it by its role's
name (`open_agents`, `attach_adapters`), and where an adapter argument points
(`resolve_adapter_path`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coopcode.core.adapters import adapter_folder, check_adapter
from coopcode.core.errors import ModelError, UserError
from coopcode.engines import Engine, engine_kind, load_engine
from coopcode.records.vocabulary import Role

HELPER, MAIN = Role.HELPER, Role.MAIN  # the adapters, named for their roles


@dataclass
class Agents:
    """The loaded engine and the adapter names/paths the two agents use (None: bare base)."""

    engine: Engine
    helper_adapter: tuple[str, str] | None = None  # (name in the engine, path)
    main_adapter: tuple[str, str] | None = None

    def __enter__(self) -> Agents:
        return self

    def __exit__(self, *exc: object) -> None:
        self.engine.close()  # its decode thread must be out of torch before the process exits

    @property
    def helper_name(self) -> str | None:
        return self.helper_adapter[0] if self.helper_adapter else None

    @property
    def main_name(self) -> str | None:
        return self.main_adapter[0] if self.main_adapter else None


def resolve_adapter_path(path: str | None, role: str) -> str | None:
    """An adapter argument: a PEFT folder, a run folder holding `role/`, or a run's name in
    the search path (`coopcode.core.adapters.adapter_folder`)."""
    return adapter_folder(path, role)


def check_adapter_folders(helper_adapter: str | None,
                          main_adapter: str | None) -> tuple[str | None, str | None]:
    """Both agents' adapter folders, resolved and checked before seconds are spent on the
    base (which is checked against them after it loads). Every bad one is named, in one
    ModelError: `helper adapter X: no such folder; main adapter Y: not a PEFT folder`."""
    paths = resolve_adapter_path(helper_adapter, HELPER), resolve_adapter_path(main_adapter, MAIN)
    problems = []
    for role, path in zip((HELPER, MAIN), paths, strict=True):
        if path:
            try:
                check_adapter(path, base_fingerprint="", base_name="")
            except ModelError as e:
                problems.append(f"{role} {e}")
    if problems:
        raise ModelError("; ".join(problems))
    return paths


def open_agents(
    model: str | None,
    helper_adapter: str | None = None,
    main_adapter: str | None = None,
    *,
    engine: str = "transformers",
    progress: Callable[[str], None] | None = None,
    **engine_kw: Any,
) -> Agents:
    """Load the base model once and the agents' adapters onto it (a server engine serves
    them by name: `--helper-model` / `--main-model`)."""
    served = engine_kind(engine).served
    if served and (helper_adapter or main_adapter):
        raise UserError(f"--engine {engine} serves adapters by name: start the server with "
                        "--lora-modules helper=FOLDER main=FOLDER and pass --helper-model helper "
                        "--main-model main")
    helper_path, main_path = check_adapter_folders(helper_adapter, main_adapter)
    eng = load_engine(model, engine, progress=progress, **engine_kw)
    agents = attach_adapters(eng, helper_path, main_path, progress)
    names = eng.adapters() if served else {}
    for role in (HELPER, MAIN):
        if role in names:  # the served model name stands where a folder would
            setattr(agents, f"{role}_adapter", (role, f"served:{names[role]}"))
    return agents


def attach_adapters(engine: Engine, helper_adapter: str | None, main_adapter: str | None,
                    progress: Callable[[str], None] | None = None) -> Agents:
    """The agents on an engine already loaded: each adapter (a PEFT folder, or a run's
    folder or name) loaded under its role's name, so one base serves both (the TUI keeps its
    loaded base when only the adapters change)."""
    agents = Agents(engine)
    for role, given in ((HELPER, helper_adapter), (MAIN, main_adapter)):
        path = resolve_adapter_path(given, role)
        if path:
            if progress is not None:
                progress(f"loading the {role} adapter {path}")
            engine.load_adapter(role, path)
            setattr(agents, f"{role}_adapter", (role, path))
    return agents
