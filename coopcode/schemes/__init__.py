"""Collaboration schemes, one module each: how the helper and the main agent write one program.

- `single`: one agent writes the function.
- `sequential` (default): the helper writes `aux`, then the main agent, seeing it, the entry point.
- `parallel`: both at once; main knows an `aux` is coming but not its code.
- `concat`: a helper and an independent single agent, glued together.
- `discussion`: a parallel round, then one where each sees the other's answer.
- `contract`: the helper sees only the problem's contract for aux; main the task and the
  contract, not aux's body (`contract+code`: main sees the helper's code).
- `plan`: main writes aux's contract first, the helper implements it, main writes the entry
  point against it (`plan+code`: main sees the helper's code).

A new scheme is one module with a `Scheme` subclass: the shipped ones are listed in
`SCHEME_TYPES` below, one of yours is added with `register_scheme(cls)` (also exported from
`coopcode`). What it is, it says as data: its `roles` (which agents write the program; each
role's adapter is `adapter_of(role)`), whether main sees the helper's code
(`main_sees_helper`) and whether MAGRPO can train it (`trainable`).
"""

from __future__ import annotations

from coopcode.core.errors import UserError
from coopcode.problems import Contract, Problem
from coopcode.records.vocabulary import ContractSource, Role
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
from coopcode.schemes.contract import ContractScheme, ContractSeesCode
from coopcode.schemes.contracts import contract_for
from coopcode.schemes.discussion import Discussion
from coopcode.schemes.parallel import Parallel
from coopcode.schemes.plan import Plan, PlanSeesCode
from coopcode.schemes.prompting import PromptBook
from coopcode.schemes.sequential import Sequential
from coopcode.schemes.single import Single

SCHEME_TYPES: dict[str, type[Scheme]] = {
    cls.name: cls for cls in (Single, Sequential, Parallel, Concat, Discussion, ContractScheme,
                              ContractSeesCode, Plan, PlanSeesCode)}
SCHEMES = tuple(SCHEME_TYPES)
DEFAULT_SCHEME = "sequential"


def register_scheme(cls: type[Scheme]) -> type[Scheme]:
    """Add a scheme (usable as a decorator): `--scheme NAME` (bench, solve, evaluate, the
    TUI's lists), `get_scheme(NAME)` then run it, and `train --scheme NAME` when it is
    `trainable`. A scheme that says something impossible of itself is refused here."""
    if cls.trainable and cls.roles != (Role.HELPER, Role.MAIN):
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
    """Whether scheme `name` has a helper agent (its roles say; a scheme not registered
    here, read from a run's records, is taken to have one)."""
    cls = SCHEME_TYPES.get(name)
    return cls is None or cls.has_helper()


MAIN_SEES = ("contract", "code")


def with_main_seeing(name: str, main_sees: str) -> str:
    """The scheme `name` with main shown what `main_sees` says (`--main-sees`): `code` picks
    a scheme's code variant (`contract` -> `contract+code`); schemes where it does not apply
    (main always sees the code under sequential, never under parallel) stay as they are."""
    if main_sees not in MAIN_SEES:
        raise UserError(f"--main-sees {main_sees!r}: use one of {', '.join(MAIN_SEES)}")
    cls = SCHEME_TYPES.get(name)
    if main_sees == "code" and cls is not None and cls.sees_code_variant:
        return cls.sees_code_variant
    return name


def scheme_contract(problem: Problem, name: str, text: str = "") -> Contract | None:
    """The contract a sample of scheme `name` had its helper implement: the problem's, the
    planned one in `text` (what the sample recorded), or None (`Scheme.contract_source`)."""
    cls = SCHEME_TYPES.get(name)
    return contract_for(problem, cls.contract_source if cls is not None else ContractSource.NONE,
                        text)


BENCH_REMEDY = "use --problems compose:train|val|test, problem files with a contract, or the plan scheme"


def check_problems_fit(schemes: tuple[str, ...] | list[str], problems: list[Problem], *,
                       remedy: str = BENCH_REMEDY) -> None:
    """One line, before anything loads, when a scheme that needs the problem's contract
    (`contract`) meets problems without one; `remedy` names the way out in the command's
    own flags (`solve` has no --problems)."""
    for name in schemes:
        cls = SCHEME_TYPES.get(name)
        if cls is None or cls.contract_source != ContractSource.PROBLEM:
            continue
        missing = [p.task_id for p in problems if p.contract is None]
        if missing and len(problems) == 1:
            raise UserError(f"the {name} scheme needs a contract for aux, and {missing[0]} "
                            f"has none: {remedy}")
        if missing:
            raise UserError(f"the {name} scheme needs a contract for aux, and {len(missing)} of "
                            f"{len(problems)} problems have none (first: {missing[0]}): {remedy}")


def get_scheme(name: str) -> Scheme:
    """The scheme called `name` (one line naming the choices when there is none)."""
    if name not in SCHEME_TYPES:
        raise UserError(f"unknown scheme {name!r}: use one of {', '.join(SCHEME_TYPES)}")
    return SCHEME_TYPES[name]()


__all__ = [
    "DEFAULT_SCHEME", "MAIN_SEES", "ROLE_ADAPTERS", "SCHEMES", "Ask", "Check", "PromptBook", "SampleState",
    "check_problems_fit",
    "Scheme", "SeedFn", "Steps", "adapter_of", "main_role", "get_scheme", "has_helper", "per_role", "public_check",
    "register_scheme", "sample_steps", "scheme_contract", "scheme_names",
    "trainable_scheme_names", "with_main_seeing",
]
