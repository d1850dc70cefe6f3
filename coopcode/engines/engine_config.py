"""`EngineConfig`: which engine generates, and the options each engine adds, declared once.

`coopcode solve`, `coopcode bench` and `coopcode paper-table` take these options
(`coopcode.settings.options.config_options`); `validate` refuses a bad value or an option of another
engine with one line before anything loads, and `kwargs` is what `load_engine` (through
`engines.agents.open_agents`) is given.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from coopcode.core.errors import UserError
from coopcode.core.inputs import check_server_urls
from coopcode.engines.registry import ENGINE_KINDS, engine_kind
from coopcode.settings.options import check_options, option, options

DTYPES = ("bfloat16", "float32", "float16")


@dataclass(frozen=True)
class EngineConfig:
    """The engine and its options (`None`: the engine's own default)."""

    HELP_PANEL: ClassVar[str] = "Engine (where the model runs)"  # --help groups them apart

    engine: str = option("transformers", ", ".join(k.help for k in ENGINE_KINDS.values()) + ".")
    dtype: str | None = option(None, "bfloat16 or float32 [default: on a CPU, whichever multiplies "
                               "a full batch faster here, measured once].")
    deterministic: bool = option(False, "Generate every sample alone, so a seed gives the same text "
                                 "whatever else is generated (a resumed run regenerates exactly); "
                                 "slower. Embedded engine only.")
    max_batch: int | None = option(None, "Rows in flight in the embedded engine [default: 64].",
                                   at_least=1)
    kv_cache_gb: float | None = option(None, "The embedded engine's KV cache at most this many GB: "
                                       "rows wait for room beyond it [default: 4].",
                                       within="(0, 1024]")
    base_url: tuple[str, ...] = option((), "--engine openai: an OpenAI-compatible server, e.g. "
                                       "http://127.0.0.1:8000/v1; repeat for replicas "
                                       "(least-loaded first).", repeat=True)
    api_key_env: str | None = option(None, "--engine openai: the environment variable holding "
                                     "the API key.")
    helper_model: str | None = option(None, "--engine openai: the served model name the helper "
                                      "uses (e.g. a --lora-modules name).")
    main_model: str | None = option(None, "--engine openai: the served model name the main agent "
                                    "uses.")
    engine_option: tuple[str, ...] = option(
        (), "NAME=VALUE: an option of a registered engine's own (its EngineKind.settings); repeat.",
        flags=("--engine-option",), repeat=True)

    def validate(self) -> None:
        """UserError, one line naming the flag: an unknown engine or dtype, an option of
        another engine, a server engine without a server, a number out of bounds."""
        kind = engine_kind(self.engine)
        if self.dtype is not None and self.dtype not in DTYPES:
            raise UserError(f"--dtype {self.dtype}: use bfloat16, float32 or float16")
        for other in ENGINE_KINDS.values():  # an option only another engine takes
            given = [name for name in other.options
                     if name not in kind.options and getattr(self, name)]
            if given:
                flag = "--" + given[0].replace("_", "-")
                raise UserError(f"{flag} is an option of {other.title}, not {self.engine}")
        if kind.served:
            if not self.base_url:
                raise UserError(f"--engine {self.engine} needs --base-url URL (e.g. "
                                "http://127.0.0.1:8000/v1)")
            check_server_urls("--base-url", self.base_url)
        check_options(self)
        self.own_options()

    def own_options(self) -> dict[str, Any]:
        """The engine's own options (`--engine-option NAME=VALUE`, checked against its
        `EngineKind.settings`), with that class's defaults for those not given."""
        kind = engine_kind(self.engine)
        if kind.settings is None:
            if self.engine_option:
                raise UserError(f"--engine-option {self.engine_option[0]}: {kind.title} takes no "
                                "options of its own")
            return {}
        declared = {o.name: o for o in options(kind.settings)}
        given: dict[str, Any] = {}
        for item in self.engine_option:
            name, sep, text = item.partition("=")
            key = name.strip().replace("-", "_")
            if not sep:
                raise UserError(f"--engine-option {item}: write NAME=VALUE")
            if key not in declared:
                raise UserError(f"--engine-option {item}: {kind.name} has no option {name!r}: use "
                                f"one of {', '.join(declared)}")
            opt = declared[key]
            try:
                given[key] = opt.parse(text)
                opt.check(given[key])
            except (ValueError, UserError) as e:
                raise UserError(f"--engine-option {item}: "
                                f"{str(e).replace(f' for {opt.flag}', '')}") from None
        return asdict(kind.settings(**given))

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the engine's constructor these options ask for."""
        own = self.own_options()
        if engine_kind(self.engine).served:  # the server chose its dtype
            return {"base_urls": list(self.base_url), "api_key_env": self.api_key_env,
                    "helper_model": self.helper_model, "main_model": self.main_model, **own}
        kw: dict[str, Any] = {"dtype": self.dtype}
        if self.deterministic:
            kw["deterministic"] = True
        if self.max_batch is not None:
            kw["max_batch"] = self.max_batch
        if self.kv_cache_gb is not None:
            kw["kv_cache_gb"] = self.kv_cache_gb
        return {**kw, **own}
