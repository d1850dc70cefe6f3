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
from typing import TYPE_CHECKING, ClassVar

from coopcode.core.errors import UserError
from coopcode.models.catalog import DEFAULT_MODEL
from coopcode.settings.options import check_options, option
from sandbox.backend import BACKENDS

if TYPE_CHECKING:
    from coopcode.core.adapters import ChosenAdapters, TrainedWith


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
    """Each agent's LoRA adapter (None: the base model): a trained run named once with
    `--adapters`, or each agent's own. A run is found by name in ./checkpoints, then in
    $COOPCODE_CHECKPOINTS, then in the cache (`coopcode checkpoints list` says where)."""

    adapters: str | None = option(
        None, "A trained run, by name (`coopcode checkpoints list`) or folder: loads a pair's "
        "helper and main, or a single agent's; what it was trained with (scheme, reward, "
        "--main-sees, problems) becomes the default.")
    helper_adapter: str | None = option(None, "The helper's LoRA adapter: a PEFT folder, or a "
                                        "run's name or folder [default: --adapters' helper].")
    main_adapter: str | None = option(None, "Main's LoRA adapter: a PEFT folder, or a run's "
                                      "name or folder [default: --adapters' main].")

    def validate(self) -> None:
        check_options(self)
        self.chosen()  # a run found nowhere, or a pair given to one agent: refused now

    def chosen(self) -> ChosenAdapters:
        """Each agent's adapter folder and the run whose training settings are the defaults."""
        from coopcode.core.adapters import choose_adapters

        return choose_adapters(self.adapters, self.helper_adapter, self.main_adapter)


def split_scheme(name: str) -> tuple[str, str]:
    """(the scheme, what main sees) of a scheme's name: `contract+code` is (`contract`,
    `code`), the inverse of `MainSees.scheme`."""
    from coopcode.schemes import MAIN_SEES, get_scheme, scheme_names

    for base in scheme_names():
        variant = get_scheme(base).sees_code_variant
        if variant and variant == name:
            return base, "code"
    return name, MAIN_SEES[0]


@dataclass(frozen=True)
class RunDefaults:
    """The settings a loaded run sets because the user left them (`apply_run_defaults`)."""

    scheme: str | None = None  # the scheme's name, `+code` variant included
    reward: str | None = None
    problems: str | None = None
    said: str = ""  # one line for stderr: whose defaults, which, and the flags that override


def run_defaults(trained: TrainedWith | None, given: set[str], *,
                 problems: bool = False) -> RunDefaults:
    """What `trained` (the run whose adapters are loaded) sets of the settings not in `given`
    (the fields the user set: `scheme`, `schemes`, `main_sees`, `reward`, `problems`): its
    scheme (what main sees included, unless --main-sees was given), its reward and, with
    `problems`, its held-out split."""
    if trained is None:
        return RunDefaults()
    scheme = reward = split = None
    said: list[str] = []
    if trained.scheme and not given & {"scheme", "schemes"}:
        base, sees = split_scheme(trained.scheme)
        if "main_sees" in given:  # the user's --main-sees over the run's
            scheme = base
            said.append(f"scheme {base}")
        else:
            scheme = trained.scheme
            said.append(f"scheme {base}" + (f" (--main-sees {sees})" if sees != "contract" else ""))
    if trained.reward and "reward" not in given:
        reward = trained.reward
        said.append(f"reward {reward}")
    if problems and trained.held_out and "problems" not in given:
        split = trained.held_out
        said.append(f"problems {split} (trained on {trained.problems})")
    flags = {"scheme": "--scheme", "reward": "--reward", "problems": "--problems"}
    override = ", ".join(flag for word, flag in flags.items() if any(s.startswith(word) for s in said))
    line = (f"{trained.run} was trained with {', '.join(said)}: used here ({override} "
            "override)") if said else ""
    return RunDefaults(scheme, reward, split, line)


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
