"""`EngineConfig`: which engine generates, and the options each engine adds, declared once.

`coopcode solve`, `coopcode bench` and `coopcode paper-table` take these options
(`coopcode.options.config_options`); `validate` refuses a bad value or an option of another
engine with one line before anything loads, and `kwargs` is what `load_engine` (through
`runtime.open_agents`) is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coopcode.errors import UserError
from coopcode.options import check_options, option

ENGINES = ("transformers", "vllm", "openai")
DTYPES = ("bfloat16", "float32", "float16")
EMBEDDED_ONLY = ("deterministic", "max_batch", "kv_cache_gb")  # the embedded engine's options
SERVED_ONLY = ("base_url", "api_key_env", "helper_model", "main_model")  # --engine openai's


@dataclass(frozen=True)
class EngineConfig:
    """The engine and its options (`None`: the engine's own default)."""

    engine: str = option("transformers", "transformers (default, CPU or GPU), vllm (in-process, "
                         "optional extra) or openai (any OpenAI-compatible server: --base-url).")
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

    def validate(self) -> None:
        """UserError, one line naming the flag: an unknown engine or dtype, an option of
        another engine, a server engine without a server, a number out of bounds."""
        if self.engine not in ENGINES:
            raise UserError(f"unknown engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.dtype is not None and self.dtype not in DTYPES:
            raise UserError(f"--dtype {self.dtype}: use bfloat16, float32 or float16")
        flag = {o: "--" + o.replace("_", "-") for o in (*EMBEDDED_ONLY, *SERVED_ONLY)}
        for name in EMBEDDED_ONLY:
            if getattr(self, name) and self.engine != "transformers":
                raise UserError(f"{flag[name]} is an option of the embedded engine "
                                f"(--engine transformers), not {self.engine}")
        if self.engine != "openai":
            given = [flag[name] for name in SERVED_ONLY if getattr(self, name)]
            if given:
                raise UserError(f"{given[0]} is an option of --engine openai")
        else:
            if not self.base_url:
                raise UserError("--engine openai needs --base-url URL (e.g. http://127.0.0.1:8000/v1)")
            for url in self.base_url:
                if not url.startswith(("http://", "https://")):
                    raise UserError(f"--base-url {url!r}: give an http(s) URL such as "
                                    "http://127.0.0.1:8000/v1")
        check_options(self)

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the engine's constructor these options ask for."""
        if self.engine == "openai":  # the server chose its dtype
            return {"base_urls": list(self.base_url), "api_key_env": self.api_key_env,
                    "helper_model": self.helper_model, "main_model": self.main_model}
        kw: dict[str, Any] = {"dtype": self.dtype}
        if self.deterministic:
            kw["deterministic"] = True
        if self.max_batch is not None:
            kw["max_batch"] = self.max_batch
        if self.kv_cache_gb is not None:
            kw["kv_cache_gb"] = self.kv_cache_gb
        return kw
