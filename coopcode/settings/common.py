"""The option groups several commands share, each setting declared once.

A command takes a group as a parameter annotated with its class (`coopcode.settings.options.config_options`
turns the fields into flags), so `--model`, `--sandbox` or `--json` have one default, one help
text and one check wherever they appear:

    @app.command()
    @config_options
    def solve(problem: str, model: ModelChoice, sandbox: SandboxChoice, ...) -> None: ...

Imported by every command's module: it stays cheap (no torch, no engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from coopcode.core.errors import UserError
from coopcode.models.catalog import DEFAULT_MODEL
from coopcode.settings.options import check_options, option
from sandbox.backend import BACKENDS


@dataclass(frozen=True)
class ModelChoice:
    """The base model both agents run on."""

    model: str | None = option(None, "Catalog name, local folder or Hugging Face id "
                               f"[default: {DEFAULT_MODEL}].", flags=("--model", "-m"))

    def validate(self) -> None:
        if self.model is not None and not self.model.strip():
            raise UserError("--model is empty: give a catalog name, a folder or a Hugging Face id")


@dataclass(frozen=True)
class AdapterChoice:
    """Each agent's LoRA adapter (None: the base model)."""

    helper_adapter: str | None = option(None, "LoRA adapter folder (or checkpoints/<run>) for the "
                                        "helper.")
    main_adapter: str | None = option(None, "LoRA adapter folder (or checkpoints/<run>) for the "
                                      "main agent.")

    def validate(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class MainSees:
    """What main is shown of the helper's work under the schemes that keep each agent to its
    part (`contract`, `plan`)."""

    main_sees: str = option("contract", "Under contract and plan: contract (aux's signature and "
                            "docstring only) or code (the helper's code: the scheme's +code "
                            "variant, e.g. contract+code).", choices=("contract", "code"),
                            noun="--main-sees value")

    def validate(self) -> None:
        check_options(self)

    def scheme(self, name: str) -> str:
        from coopcode.schemes import with_main_seeing

        return with_main_seeing(name, self.main_sees)


@dataclass(frozen=True)
class SandboxChoice:
    """Where programs run."""

    sandbox: str = option("auto", "auto (Docker when a daemon answers), docker or process.",
                          choices=BACKENDS, noun="sandbox backend")

    def validate(self) -> None:
        check_options(self)


@dataclass(frozen=True)
class JsonOutput:
    """Machine-readable output on stdout instead of text."""

    HELP_PANEL: ClassVar[str] = "Output"

    as_json: bool = option(False, "Print the result as JSON instead of text.", flags=("--json",))

    def validate(self) -> None:
        pass


@dataclass(frozen=True)
class EventsOutput:
    """The run's events as JSON lines on stdout."""

    HELP_PANEL: ClassVar[str] = "Output"

    events: str | None = option(None, "jsonl: write events to stdout, one JSON object per line.",
                                choices=("jsonl",), noun="events format")

    def validate(self) -> None:
        if self.events not in (None, "jsonl"):  # one format: say so rather than "use one of"
            raise UserError(f"--events {self.events}: the only format is jsonl")
