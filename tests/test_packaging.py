"""Installs stay reproducible: ranges with upper bounds, and exact pins that satisfy them."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent


def _requirements() -> list[Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return [Requirement(r) for r in reqs]


def _pins() -> dict[str, Version]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_dependency_has_an_upper_bound() -> None:
    for req in _requirements():
        if any(s.operator == "==" for s in req.specifier):
            continue
        assert any(s.operator in ("<", "<=", "~=") for s in req.specifier), f"{req}: no upper bound"


def test_constraints_pin_every_dependency_inside_its_range() -> None:
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        if name == "vllm":  # an optional extra for GPU machines, installed in its own venv
            continue
        assert name in pins, f"{req.name} is not pinned in constraints.txt (make constraints)"
        assert req.specifier.contains(pins[name], prereleases=True), f"{req} vs {pins[name]}"


def test_the_venv_holds_the_pinned_versions() -> None:
    """What `make setup` installed is what constraints.txt says (the stamp is remade when it
    changes)."""
    for name, version in _pins().items():
        try:
            installed = Version(md.version(name))
        except md.PackageNotFoundError:
            continue  # pinned for an extra this venv does not install
        assert installed.public == version.public, f"{name}: {installed} installed, {version} pinned"
