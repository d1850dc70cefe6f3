"""Collaboration schemes, one module each: how the helper and the main agent write one program.

- `single`: one agent writes the function.
- `sequential` (default): the helper writes `aux`, then the main agent, seeing it, the entry point.
- `parallel`: both at once; main knows an `aux` is coming but not its code.
- `concat`: a helper and an independent single agent, glued together.
- `discussion`: a parallel round, then one where each sees the other's answer.

A new scheme is one module with a `Scheme` subclass, registered in `SCHEMES` below.
"""

from __future__ import annotations

from coopcode.errors import UserError
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


def has_helper(name: str) -> bool:
    """Whether scheme `name` has a helper agent (its roles say; a scheme this version does
    not know, read from an older run's records, is taken to have one)."""
    cls = SCHEME_TYPES.get(name)
    return cls is None or "helper" in cls.roles


def get_scheme(name: str) -> Scheme:
    """The scheme called `name` (one line naming the choices when there is none)."""
    if name not in SCHEME_TYPES:
        raise UserError(f"unknown scheme {name!r}: use one of {', '.join(SCHEMES)}")
    return SCHEME_TYPES[name]()


__all__ = [
    "DEFAULT_SCHEME", "SCHEMES", "Ask", "Check", "PromptBook", "SampleState", "Scheme",
    "SeedFn", "Steps", "get_scheme", "has_helper", "sample_steps",
]
