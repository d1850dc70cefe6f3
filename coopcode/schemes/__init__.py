"""Collaboration schemes, one module each: how the helper and the main agent write one program.

- `single`: one agent writes the function.
- `sequential` (default): the helper writes `aux`, then the main agent, seeing it, the entry point.
- `parallel`: both at once; main knows an `aux` is coming but not its code.
- `concat`: a helper and an independent single agent, glued together.
- `discussion`: a parallel round, then one where each sees the other's answer.

A new scheme is one module with a `Scheme` subclass: the shipped ones are listed in
`SCHEME_TYPES` below, one of yours is added with `register_scheme(cls)`. Its `roles` say which
agents write the program (`has_helper` asks them).
"""

from __future__ import annotations

from coopcode.core.errors import UserError
from coopcode.schemes.base import Ask, Check, SampleState, Scheme, SeedFn, Steps, sample_steps
from coopcode.schemes.concat import Concat
from coopcode.schemes.discussion import Discussion
from coopcode.schemes.parallel import Parallel
from coopcode.schemes.prompting import PromptBook
from coopcode.schemes.sequential import Sequential
from coopcode.schemes.single import Single

SCHEME_TYPES: dict[str, type[Scheme]] = {
    cls.name: cls for cls in (Single, Sequential, Parallel, Concat, Discussion)}
SCHEMES = tuple(SCHEME_TYPES)
DEFAULT_SCHEME = "sequential"


def register_scheme(cls: type[Scheme]) -> type[Scheme]:
    """Add a scheme (usable as a decorator): `--scheme NAME`, `get_scheme(NAME)` then run it."""
    SCHEME_TYPES[cls.name] = cls
    return cls


def scheme_names() -> tuple[str, ...]:
    """Every scheme as of now: the shipped `SCHEMES` and those registered since."""
    return tuple(SCHEME_TYPES)


def has_helper(name: str) -> bool:
    """Whether scheme `name` has a helper agent (its roles say; a scheme this version does
    not know, read from an older run's records, is taken to have one)."""
    cls = SCHEME_TYPES.get(name)
    return cls is None or "helper" in cls.roles


def get_scheme(name: str) -> Scheme:
    """The scheme called `name` (one line naming the choices when there is none)."""
    if name not in SCHEME_TYPES:
        raise UserError(f"unknown scheme {name!r}: use one of {', '.join(SCHEME_TYPES)}")
    return SCHEME_TYPES[name]()


__all__ = [
    "DEFAULT_SCHEME", "SCHEMES", "Ask", "Check", "PromptBook", "SampleState", "Scheme",
    "SeedFn", "Steps", "get_scheme", "has_helper", "register_scheme", "sample_steps",
    "scheme_names",
]
