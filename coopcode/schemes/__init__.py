"""Collaboration schemes, one module each: how the helper and the main agent write one program.

- `single`: one agent writes the function.
- `sequential` (default): the helper writes `aux`, then the main agent, seeing it, the entry point.
- `parallel`: both at once; main knows an `aux` is coming but not its code.
- `concat`: a helper and an independent single agent, glued together.
- `discussion`: a parallel round, then one where each sees the other's answer.

A new scheme is one module with a `Scheme` subclass: the shipped ones are listed in
`SCHEME_TYPES` below, one of yours is added with `register_scheme(cls)` (also exported from
`coopcode`). What it is, it says as data: its `roles` (which agents write the program; each
role's adapter is `adapter_of(role)`), whether main sees the helper's code
(`main_sees_helper`) and whether MAGRPO can train it (`trainable`).
"""

from __future__ import annotations

from coopcode.core.errors import UserError
from coopcode.schemes.base import (
    ROLE_ADAPTERS,
    Ask,
    Check,
    SampleState,
    Scheme,
    SeedFn,
    Steps,
    adapter_of,
    main_role,
    per_role,
    public_check,
    sample_steps,
)
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
    """Add a scheme (usable as a decorator): `--scheme NAME` (bench, solve, evaluate, the
    TUI's lists), `get_scheme(NAME)` then run it, and `train --scheme NAME` when it is
    `trainable`. A scheme that says something impossible of itself is refused here."""
    if cls.trainable and cls.roles != ("helper", "main"):
        raise ValueError(f"scheme {cls.name!r}: MAGRPO trains roles ('helper', 'main'), in that "
                         f"order; roles {cls.roles} cannot be trainable")
    if cls.main_sees_helper and not cls.has_helper():
        raise ValueError(f"scheme {cls.name!r} has no helper whose code main could see")
    SCHEME_TYPES[cls.name] = cls
    return cls


def scheme_names() -> tuple[str, ...]:
    """Every scheme as of now: the shipped `SCHEMES` and those registered since."""
    return tuple(SCHEME_TYPES)


def trainable_scheme_names() -> tuple[str, ...]:
    """The schemes MAGRPO can train (their `trainable` says so), registered ones included."""
    return tuple(name for name, cls in SCHEME_TYPES.items() if cls.trainable)


def has_helper(name: str) -> bool:
    """Whether scheme `name` has a helper agent (its roles say; a scheme this version does
    not know, read from an older run's records, is taken to have one)."""
    cls = SCHEME_TYPES.get(name)
    return cls is None or cls.has_helper()


def get_scheme(name: str) -> Scheme:
    """The scheme called `name` (one line naming the choices when there is none)."""
    if name not in SCHEME_TYPES:
        raise UserError(f"unknown scheme {name!r}: use one of {', '.join(SCHEME_TYPES)}")
    return SCHEME_TYPES[name]()


__all__ = [
    "DEFAULT_SCHEME", "ROLE_ADAPTERS", "SCHEMES", "Ask", "Check", "PromptBook", "SampleState",
    "Scheme", "SeedFn", "Steps", "adapter_of", "main_role", "get_scheme", "has_helper", "per_role", "public_check",
    "register_scheme", "sample_steps", "scheme_names", "trainable_scheme_names",
]
