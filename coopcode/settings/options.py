"""Settings declared once: a dataclass field with its default, one line of help and, in its
metadata, what the command line, the TUI form and validation need (TRL's way).

    n: int = option(10, "Samples per problem.", at_least=1, form=2)

From such fields every `coopcode` command builds its options (`config_options`: a command
declares no flag of its own; shared groups such as the engine's, the model's or the sandbox's
are config classes of their own, taken by each command that needs them), the TUI builds its
forms (`form_options`, `option_args`), and `check_options` refuses a bad value with one line
naming its flag. Nothing else repeats a setting's name, default or help (`option_like`
declares a setting again for another command from the same field).

Metadata an `option` takes besides its default and help:
- `flags`: the CLI declarations (default `--field-name`); the first is the one messages name.
  Aliases follow it (`"--problems-per-step", "--rollout-batch"`), a bool may say
  `"--std-norm/--no-std-norm"`.
- `choices` (with `noun`, what a value is called in the error): the accepted strings; for a
  tuple field, the accepted items. A function returning them (`reward_names`) is asked each
  time, so a reward or engine registered after the config class was made is accepted.
- `at_least`, `above`, `within` (`"(0, 5]"`): the accepted numbers; `why` ends the error line.
- `label`, `form`: the TUI's short label and the field's position on its form (0: not shown).
- `hidden`: left out of `--help` (options for demos and tests).

A tuple field (`ks: tuple[int, ...]`) is typed on the command line and in a form as a
comma-separated list; with `repeat=True` its flag is given once per item instead
(`--base-url A --base-url B`), for items that may hold commas.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Annotated, Any, TypeVar

from coopcode.core.errors import UserError

F = TypeVar("F", bound=Callable[..., Any])

_INTERVAL = re.compile(r"^([\[(])\s*(\S+)\s*,\s*(\S+)\s*([\])])$")
_TYPE_NAMES = {int: "integer", float: "number", str: "text", bool: "boolean"}


def option(default: Any, help: str, *, flags: tuple[str, ...] = (), label: str = "",
           form: int = 0, choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = (),
           noun: str = "value",
           at_least: float | None = None, above: float | None = None, within: str = "",
           why: str = "", repeat: bool = False, hidden: bool = False) -> Any:
    """A dataclass field carrying its default, its one-line help and how it is offered."""
    if within and not _INTERVAL.match(within):
        raise ValueError(f"within={within!r}: write an interval such as '(0, 5]'")
    return field(default=default, metadata={
        "help": help, "flags": flags, "label": label, "form": form, "choices": choices,
        "noun": noun, "at_least": at_least, "above": above, "within": within, "why": why,
        "repeat": repeat, "hidden": hidden})


def option_like(cls: type, name: str, **changes: Any) -> Any:
    """The option `cls.name` declared again for another command, with only `changes` (its
    default, help, flags, ...) differing: a setting keeps one declaration, and where a
    command's default differs on purpose (paper-table's k are the paper's) it says so here.
    Not placed on a TUI form unless `form` is given."""
    f = cls.__dataclass_fields__[name]  # type: ignore[attr-defined]
    kw = {k: v for k, v in f.metadata.items() if k != "help"}
    kw.update(form=0, label="")
    default = changes.pop("default", f.default)
    help_text = changes.pop("help", f.metadata["help"])
    kw.update(changes)
    return option(default, help_text, **kw)


@dataclass(frozen=True)
class Option:
    """One setting of a config dataclass, as the CLI, the TUI and validation see it."""

    name: str
    default: Any
    help: str
    kind: type  # int, float, str, bool or tuple
    item: type  # a tuple's item type; else the same as `kind`
    optional: bool  # None is a value (not given)
    flags: tuple[str, ...]
    label: str
    form: int
    choice_source: tuple[str, ...] | Callable[[], tuple[str, ...]]
    noun: str
    at_least: float | None
    above: float | None
    within: str
    why: str
    repeat: bool  # a tuple whose flag is given once per item
    hidden: bool  # left out of --help (for demos and tests)

    @property
    def choices(self) -> tuple[str, ...]:
        """The accepted values (or items) as of now; empty: any."""
        source = self.choice_source
        return tuple(source()) if callable(source) else source

    @property
    def flag(self) -> str:
        """The flag error messages name: `--std-norm` for `--std-norm/--no-std-norm`."""
        return self.flags[0].split("/")[0]

    @property
    def widget_id(self) -> str:
        """The id of the field's widget on a TUI form."""
        return self.name.replace("_", "-")

    def show(self, value: Any) -> str:
        """`value` as a user types it (in a form, on a command line)."""
        if value is None:
            return ""
        if isinstance(value, tuple):
            return ",".join(str(v) for v in value)
        return str(value)

    def parse(self, text: str) -> Any:
        """The value a user typed; ValueError says what was expected."""
        text = text.strip()
        if self.optional and not text:
            return None
        if self.kind is tuple:
            try:
                return tuple(self.item(t.strip()) for t in text.split(",") if t.strip())
            except ValueError:
                raise ValueError(f"expected comma-separated {_TYPE_NAMES[self.item]}s like "
                                 f"{self.show(self.default)}") from None
        if self.kind is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"{text!r} is not a valid boolean")
            return text.lower() in ("true", "1", "yes")
        try:
            return self.kind(text)
        except ValueError:
            raise ValueError(f"{text!r} is not a valid {_TYPE_NAMES[self.kind]}") from None

    def check(self, value: Any) -> None:
        """UserError (one line naming the flag) unless `value` is one this option accepts."""
        if value is None and self.optional:
            return
        items = value if self.kind is tuple else (value,)
        choices = self.choices
        if choices:
            if not items:
                raise UserError(f"{self.flag}: name at least one {self.noun}, e.g. "
                                f"{self.flag} {self.show(self.default)}")
            for item in items:
                if item not in choices:
                    raise UserError(f"unknown {self.noun} {item!r} for {self.flag}: use one of "
                                    f"{', '.join(choices)}")
        if self.item in (int, float):
            for item in items:
                self._check_number(item)

    def _check_number(self, x: float) -> None:
        why = f": {self.why}" if self.why else ""
        if self.within:
            left, low, high, right = _INTERVAL.match(self.within).groups()  # type: ignore[union-attr]
            if not math.isfinite(x):
                raise UserError(f"{self.flag} must be a finite number (got {x})")
            lo, hi = float(low), float(high)
            if (x <= lo if left == "(" else x < lo) or (x >= hi if right == ")" else x > hi):
                raise UserError(f"{self.flag} must be in {self.within} (got {x}){why}")
        elif self.above is not None:
            if not (math.isfinite(x) and x > self.above):
                what = "a positive number" if self.above == 0 else f"a number above {self.above:g}"
                raise UserError(f"{self.flag} must be {what} (got {x}){why}")
        elif self.at_least is not None:
            if isinstance(x, float) and not (math.isfinite(x) and x >= self.at_least):
                raise UserError(f"{self.flag} must be a finite number >= {self.at_least:g} "
                                f"(got {x}){why}")
            if x < self.at_least:
                raise UserError(f"{self.flag} must be at least {self.at_least:g} (got {x}){why}")
        elif isinstance(x, float) and not math.isfinite(x):
            raise UserError(f"{self.flag} must be a finite number (got {x}){why}")


_OPTIONS: dict[type, tuple[Option, ...]] = {}


def options(cls: type) -> tuple[Option, ...]:
    """The options of a config dataclass, in field order."""
    if cls not in _OPTIONS:
        _OPTIONS[cls] = _read_options(cls)
    return _OPTIONS[cls]


def _read_options(cls: type) -> tuple[Option, ...]:
    hints = typing.get_type_hints(cls)
    found = []
    for f in fields(cls):
        meta = f.metadata
        if "help" not in meta:
            raise TypeError(f"{cls.__name__}.{f.name}: declare it with option(default, help)")
        if f.default is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: every option needs a default")
        kind, optional = _unwrap_optional(hints[f.name])
        item = kind
        if typing.get_origin(kind) is tuple:
            item, kind = typing.get_args(kind)[0], tuple
        found.append(Option(
            name=f.name, default=f.default, help=meta["help"], kind=kind, item=item,
            optional=optional, flags=meta.get("flags") or ("--" + f.name.replace("_", "-"),),
            label=meta.get("label") or f.name.replace("_", " "), form=meta.get("form", 0),
            choice_source=meta.get("choices", ()), noun=meta.get("noun", "value"),
            at_least=meta.get("at_least"), above=meta.get("above"),
            within=meta.get("within", ""), why=meta.get("why", ""),
            repeat=bool(meta.get("repeat")) and kind is tuple, hidden=bool(meta.get("hidden"))))
    return tuple(found)


def _unwrap_optional(hint: Any) -> tuple[Any, bool]:
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"{hint}: an option is one type, or one type or None")
        return rest[0], True
    return hint, False


def option_named(cls: type, name: str) -> Option:
    for opt in options(cls):
        if opt.name == name:
            return opt
    raise KeyError(name)


def check_options(config: Any) -> None:
    """Each field of `config` against its declared choices and bounds (the first bad value
    raises UserError with one line naming its flag)."""
    for opt in options(type(config)):
        opt.check(getattr(config, opt.name))


# -- the TUI ------------------------------------------------------------------------------

def form_options(cls: type) -> list[Option]:
    """The options a TUI form shows, in their form order."""
    return sorted((o for o in options(cls) if o.form), key=lambda o: o.form)


def option_args(config: Any, names: typing.Iterable[str]) -> list[str]:
    """Command-line arguments that set the named fields of `config` (None: left out)."""
    wanted = set(names)
    args: list[str] = []
    for opt in options(type(config)):
        value = getattr(config, opt.name)
        if opt.name not in wanted or value is None:
            continue
        if opt.kind is bool:
            on, _, off = opt.flags[0].partition("/")
            if value or off:
                args.append(on if value else off)
        elif opt.repeat:
            for item in value:
                args += [opt.flag, str(item)]
        else:
            args += [opt.flag, opt.show(value)]
    return args


# -- the command line ---------------------------------------------------------------------

def config_options(func: F) -> F:
    """Give a typer command one option per field of each config class it takes.

    Every parameter annotated with a config dataclass (fields declared with `option`, a
    `validate()` method) is replaced by that class's options; the command receives it as the
    config built from them and validated, so a bad value fails with one line before anything
    loads. Its other parameters (arguments, a typer.Context) stay ordinary typer parameters:
    a command declares no `--flag` of its own. Two configs of one command may not share a
    field name (each flag maps to exactly one field).
    """
    signature = inspect.signature(func, eval_str=True)
    configs = {p.name: p.annotation for p in signature.parameters.values()
               if is_config_class(p.annotation)}
    if not configs:
        raise TypeError(f"{func.__name__} takes no config class")
    params: list[inspect.Parameter] = []
    owner: dict[str, str] = {}
    for p in signature.parameters.values():
        if p.name in configs:
            for o in options(configs[p.name]):
                clash = o.name in signature.parameters and o.name not in configs
                if o.name in owner or clash:
                    raise TypeError(f"{func.__name__}: option {o.name!r} of {p.name} is declared "
                                    f"twice (also {owner.get(o.name, 'a parameter')})")
                owner[o.name] = p.name
                params.append(_cli_parameter(o, getattr(configs[p.name], "HELP_PANEL", None)))
        else:  # keyword-only: typer calls by name, and defaults may then come in any order
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(func)
    def command(**kwargs: Any) -> Any:
        built = {name: config_from_cli(cls, {o.name: kwargs.pop(o.name) for o in options(cls)})
                 for name, cls in configs.items()}
        return func(**kwargs, **built)

    command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.config_classes = dict(configs)  # type: ignore[attr-defined]
    return command  # type: ignore[return-value]


def is_config_class(obj: Any) -> bool:
    """A dataclass of `option` fields with a `validate()` method."""
    return (isinstance(obj, type) and dataclasses.is_dataclass(obj) and hasattr(obj, "validate")
            and all("help" in f.metadata for f in fields(obj)))


def _cli_parameter(opt: Option, panel: str | None = None) -> inspect.Parameter:
    import typer
    from rich.markup import escape

    _plain_help()
    cli_type: Any = str if opt.kind is tuple else opt.kind
    default = opt.show(opt.default) if opt.kind is tuple and opt.default is not None else opt.default
    if opt.repeat:  # typer collects each --flag into a list
        item: Any = opt.item
        cli_type, default = list[item] | None, list(opt.default) or None
    elif opt.optional:
        cli_type = cli_type | None
    return inspect.Parameter(opt.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=Annotated[cli_type, typer.Option(
                                 *opt.flags, help=escape(opt.help), hidden=opt.hidden,
                                 metavar=metavar(opt), rich_help_panel=panel)])


@functools.cache
def _plain_help() -> None:
    """`--help` without type noise, patched once on typer's parameter classes:
    on/off flags show no value type (typer printed `<bool>` beside flags it makes itself,
    `--help`); an argument reads as its name in capitals, `PROBLEM` (typer printed
    `{problem}` and `<str>`), `[NAME]` when it may be left out."""
    from typer.core import TyperArgument, TyperOption

    shown = TyperOption.display_type_rich

    def option_type(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag and self.metavar is None else shown(self, ctx)

    def argument_name(self: Any) -> str:
        return self.display_name_raw + ("..." if self.nargs != 1 else "")

    def usage_name(self: Any) -> str:
        name = argument_name(self)
        return name if self.required else f"[{name}]"

    TyperOption.display_type_rich = option_type  # type: ignore[method-assign]
    TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]
    TyperArgument.display_name_raw = property(  # type: ignore[assignment,method-assign]
        lambda self: self.metavar or self.name.upper())
    TyperArgument._rich_display_name = argument_name  # type: ignore[method-assign]
    TyperArgument._usage_display_name = usage_name  # type: ignore[method-assign]


def metavar(opt: Option) -> str:
    """What `--help` shows a flag takes: nothing for an on/off flag, the choices where they
    are few and fixed (`auto|docker|process`), else N, X, TEXT (comma lists: `N,N,...`)."""
    if opt.kind is bool:
        return ""
    source = opt.choice_source
    if source and not callable(source) and opt.kind is not tuple and len("|".join(source)) <= 12:
        return "|".join(source)
    word = {int: "N", float: "X"}.get(opt.item, "TEXT")
    return f"{word},{word},..." if opt.kind is tuple and not opt.repeat else word


def parse_option(cls: type, name: str, text: str) -> Any:
    """Field `name` of `cls` as typed on a command line (`--k 1,10`: (1, 10)); UserError
    naming the flag when `text` is not such a value."""
    opt = option_named(cls, name)
    try:
        return opt.parse(text)
    except ValueError as e:
        raise UserError(f"{opt.flag} {text}: {e}") from None


def config_from_cli(cls: type, values: dict[str, Any]) -> Any:
    """The validated config from command-line values (lists typed as text are parsed)."""
    for opt in options(cls):
        if opt.repeat and opt.name in values:
            values[opt.name] = tuple(values[opt.name] or ())
        elif opt.kind is tuple and isinstance(values.get(opt.name), str):
            values[opt.name] = parse_option(cls, opt.name, values[opt.name])
    config = cls(**values)
    config.validate()
    return config


def given_on_command_line(ctx: Any, cls: type) -> set[str]:
    """The fields of `cls` the user set on the command line (not left at their default)."""
    # By name: typer may carry its own copy of click's ParameterSource enum.
    return {o.name for o in options(cls)
            if getattr(ctx.get_parameter_source(o.name), "name", "") == "COMMANDLINE"}
