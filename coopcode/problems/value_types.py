"""Types of plain values, for deciding which HumanEval steps compose (f takes what g returns).

A type is an atom (`"int"`, `"float"`, `"str"`, `"bool"`, `"None"`, `"?"` for not known,
`"object"` for values that disagree) or a tuple: `("list", T)`, `("tuple", T1, T2, ...)`,
`("dict", K, V)`, `("optional", T)`. They come from two places, which agree where both speak:
- a signature's annotation, normalised: `List[int]`, `list[int]` and `typing.List[int]` are
  `("list", "int")`; a bare `list` is `("list", "?")`; `Optional[X]` and `X | None` are
  `("optional", X)`; `Any` and anything unknown are `"?"`;
- the values themselves (the literal arguments of a problem's tests, the values its
  canonical solution returns in the sandbox), joined: int with float is float, an empty list
  is `("list", "?")`, a value with None is optional, anything else that disagrees is object.
"""

from __future__ import annotations

import ast
from typing import Any, TypeAlias

Type: TypeAlias = str | tuple[Any, ...]

UNKNOWN = "?"
MIXED = "object"
_ATOMS = {bool: "bool", int: "int", float: "float", str: "str", type(None): "None"}
_GENERICS = {"list": "list", "List": "list", "tuple": "tuple", "Tuple": "tuple",
             "dict": "dict", "Dict": "dict"}


def value_type(value: Any) -> Type:
    """The type of a plain value (list, tuple, dict of atoms); sets and others are object."""
    if type(value) in _ATOMS:
        return _ATOMS[type(value)]
    if isinstance(value, list):
        return ("list", join_all(value_type(v) for v in value))
    if isinstance(value, tuple):
        return ("tuple", *(value_type(v) for v in value))
    if isinstance(value, dict):
        return ("dict", join_all(value_type(k) for k in value),
                join_all(value_type(v) for v in value.values()))
    return MIXED


def join_all(types: Any) -> Type:
    """The join of several types (UNKNOWN for none)."""
    result: Type = UNKNOWN
    for t in types:
        result = join(result, t)
    return result


def join(a: Type, b: Type) -> Type:
    """The least type that holds both (MIXED when they disagree)."""
    if a == b or b == UNKNOWN:
        return a
    if a == UNKNOWN:
        return b
    if {a, b} == {"int", "float"}:
        return "float"
    if a == "None" or b == "None":
        other = b if a == "None" else a
        return other if isinstance(other, tuple) and other[0] == "optional" else ("optional", other)
    if isinstance(a, tuple) and a[0] == "optional":
        return _optional(join(a[1], b))
    if isinstance(b, tuple) and b[0] == "optional":
        return _optional(join(a, b[1]))
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] and len(a) == len(b):
        parts = tuple(join(x, y) for x, y in zip(a[1:], b[1:]))
        return MIXED if MIXED in parts else (a[0], *parts)
    return MIXED


def _optional(inner: Type) -> Type:
    return MIXED if inner == MIXED else ("optional", inner)


def annotation_type(node: ast.expr | None) -> Type:
    """The type an annotation names (UNKNOWN when absent or not understood)."""
    if node is None:
        return UNKNOWN
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.Attribute):  # typing.List[...] reads as List[...]
        node = ast.Name(id=node.attr)
    if isinstance(node, ast.Name):
        if node.id in ("int", "float", "str", "bool"):
            return node.id
        if node.id in _GENERICS:
            kind = _GENERICS[node.id]
            return (kind, UNKNOWN, UNKNOWN) if kind == "dict" else (kind, UNKNOWN)
        return UNKNOWN
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return join(annotation_type(node.left), annotation_type(node.right))
    if isinstance(node, ast.Subscript):
        base = node.value.attr if isinstance(node.value, ast.Attribute) else \
            node.value.id if isinstance(node.value, ast.Name) else ""
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        inner = tuple(annotation_type(a) for a in args)
        if base == "Optional" and len(inner) == 1:
            return join("None", inner[0])
        if base == "Union":
            return join_all(inner)
        generic = _GENERICS.get(base)
        if generic == "list" and len(inner) == 1:
            return ("list", inner[0])
        if generic == "dict" and len(inner) == 2:
            return ("dict", *inner)
        if generic == "tuple" and not (len(args) == 2 and isinstance(args[1], ast.Constant)
                                    and args[1].value is Ellipsis):
            return ("tuple", *inner)
    return UNKNOWN


def refine(declared: Type, observed: Type) -> Type:
    """The declared type with its unknown parts filled in from the observed one.

    Where the declaration says something, it wins (a `List[float]` parameter whose tests
    happen to pass ints still takes floats)."""
    if declared == UNKNOWN:
        return observed
    if isinstance(declared, tuple) and isinstance(observed, tuple) and declared[0] == observed[0] \
            and len(declared) == len(observed):
        return (declared[0], *(refine(d, o) for d, o in zip(declared[1:], observed[1:])))
    if isinstance(declared, tuple) and declared[0] == "optional":
        inner = observed[1] if isinstance(observed, tuple) and observed[0] == "optional" else observed
        return ("optional", refine(declared[1], inner if inner != "None" else UNKNOWN))
    return declared


def accepts(param: Type, arg: Type) -> bool:
    """Whether a parameter of type `param` takes values of type `arg`.

    Exact, except that an int is a float (as for annotations, PEP 484) and a part the
    parameter leaves unknown takes anything known; nothing takes a type with a MIXED or
    UNKNOWN part (a function whose lists were all empty has not shown what it returns)."""
    if arg in (MIXED, UNKNOWN) or param == MIXED:
        return False
    if param == arg or param == UNKNOWN:
        return True
    if param == "float" and arg == "int":
        return True
    if isinstance(param, tuple) and param[0] == "optional":
        return arg == "None" or accepts(param[1], arg[1] if isinstance(arg, tuple)
                                        and arg[0] == "optional" else arg)
    if isinstance(param, tuple) and isinstance(arg, tuple) and param[0] == arg[0] \
            and len(param) == len(arg):
        return all(accepts(p, a) for p, a in zip(param[1:], arg[1:]))
    return False


def show(t: Type) -> str:
    """A type as Python writes it: list[int], tuple[int, str], str | None, Any."""
    if t == UNKNOWN:
        return "Any"
    if isinstance(t, str):
        return t
    if t[0] == "optional":
        return f"{show(t[1])} | None"
    return f"{t[0]}[{', '.join(show(x) for x in t[1:])}]"
