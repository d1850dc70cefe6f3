"""scripts/gpu_check.sh's helpers, plain Python (3.10+, `packaging` the one import not in the
standard library: .venv holds it when packing, the carried wheels when checking).

    python scripts/gpu_check.py carry BASE_FILE PYVER...   (pack, in .venv)
        the packages to carry, `name==version` a line: the dependency closure of coopcode,
        pytest and pytest-timeout as .venv holds them, for each PYVER, not descending into what
        BASE_FILE names (the GPU machine's Python brings those, with what they need).
    python scripts/gpu_check.py sizes REPO DIR              (pack)
        what a device call would send: the repository's tree (tracked files and untracked ones
        git does not ignore) plus DIR, against the 64 MiB limit.
    python scripts/gpu_check.py verify SITE                 (run, PYTHONPATH=SITE)
        every requirement of what was installed in SITE met by what this Python imports
        (SITE first, then the machine's own packages); exit 1 when one is not.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

LIMIT = 64 * 2**20  # the device tool's limit on the tree that travels
ROOTS = ("coopcode", "pytest", "pytest-timeout")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_names(path: Path) -> set[str]:
    return {norm(line.split("#")[0].strip()) for line in path.read_text().splitlines()
            if line.split("#")[0].strip()}


def requirements(dist: metadata.Distribution, pyvers: list[str]) -> list[str]:
    """The names `dist` needs on Linux x86-64 under any of `pyvers` (extras left out)."""
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or any(
                req.marker.evaluate({"python_version": v, "python_full_version": f"{v}.0",
                                     "extra": "", "sys_platform": "linux",
                                     "platform_system": "Linux", "platform_machine": "x86_64"})
                for v in pyvers):
            names.append(norm(req.name))
    return names


def carry(base_file: Path, pyvers: list[str]) -> int:
    base = read_names(base_file)
    seen: dict[str, str] = {}
    todo = list(ROOTS)
    while todo:
        name = norm(todo.pop())
        if name in seen or name in base:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            print(f"error: {name} is needed but not installed here", file=sys.stderr)
            return 1
        seen[name] = dist.version
        todo.extend(requirements(dist, pyvers))
    for name in sorted(seen):
        if name != "coopcode":  # its wheel is built from the checkout
            print(f"{name}=={seen[name]}")
    return 0


def tree_bytes(repo: Path) -> tuple[int, dict[str, int]]:
    """What travels of the repository: tracked files and untracked ones not ignored."""
    out = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], capture_output=True, check=True).stdout
    total, top = 0, dict[str, int]()
    for rel in {p for p in out.decode().split("\0") if p}:
        path = repo / rel
        if path.is_symlink() or not path.is_file():
            continue
        size = path.stat().st_size
        total += size
        head = rel.split("/")[0]
        top[head] = top.get(head, 0) + size
    return total, top


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def sizes(repo: Path, carried: Path) -> int:
    wheels = sorted((carried / "wheels").glob("*.whl"))
    compiled = [w.name for w in wheels if not w.name.endswith("-none-any.whl")
                and "-py3-none-" not in w.name]  # py3-none-PLATFORM: pure Python all the same
    spec = sum(dir_bytes(p) if p.is_dir() else p.stat().st_size
               for p in carried.iterdir() if p.name != "wheels")
    print(f"{len(wheels)} wheels, {mib(sum(w.stat().st_size for w in wheels))} "
          f"({len(wheels) - len(compiled)} pure Python; compiled: "
          + ", ".join(f"{n.split('-')[0]} {n.split('-')[2]} {mib(Path(carried / 'wheels' / n).stat().st_size)}"
                      for n in compiled)
          + f"); the rest (the tiny model's spec, carry.txt): {mib(spec)}")
    tree, top = tree_bytes(repo)
    inside = carried.resolve().is_relative_to(repo.resolve())
    ignored = inside and subprocess.run(
        ["git", "-C", str(repo), "check-ignore", "-q", str(carried)]).returncode == 0
    extra = dir_bytes(carried) if ignored else 0  # not ignored: git ls-files counted it
    total = tree + extra
    biggest = ", ".join(f"{k}/ {mib(v)}" for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:3])
    print(f"the repository's tree: {mib(tree)} (most in {biggest}); carried "
          f"{carried.name}/: {mib(dir_bytes(carried))}")
    if not inside:
        print(f"note: {carried} is outside the repository: a device call carries only paths "
              f"inside it (pack into {repo.name}/.gpu-check)")
    fits = total <= LIMIT
    print(f"a device call would send {mib(total)} of its {mib(LIMIT)} limit: "
          + (f"fits, {mib(LIMIT - total)} to spare" if fits
             else f"DOES NOT FIT, {mib(total - LIMIT)} over"))
    return 0


def verify(site: Path) -> int:
    """Requirements of SITE's distributions (markers for this Python) against what imports."""
    from packaging.requirements import Requirement

    env_pyver = f"{sys.version_info[0]}.{sys.version_info[1]}"
    carried = {norm(d.metadata["Name"]): d.version for d in metadata.distributions(path=[str(site)])}
    missing: dict[str, set[str]] = {}
    wrong = set()
    for dist in metadata.distributions(path=[str(site)]):
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                have = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                missing.setdefault(norm(req.name), set()).add(norm(dist.metadata["Name"]))
                continue
            if req.specifier and not req.specifier.contains(have, prereleases=True):
                wrong.add(f"{norm(req.name)} {have} ({norm(dist.metadata['Name'])} wants "
                          f"{req.specifier})")
    machine = ", ".join(f"{n} {metadata.version(n)}" for n in
                        ("numpy", "tokenizers", "safetensors", "matplotlib")
                        if n not in carried and _has(n)) or "none of numpy, tokenizers, ..."
    import coopcode

    own = Path(coopcode.__file__).resolve().is_relative_to(site.resolve())
    verdict = "every requirement met"
    if missing or wrong:
        verdict = "; ".join(
            (["MISSING (scripts/gpu_check_base.txt: the machine must bring them): "
              + ", ".join(sorted(missing))] if missing else [])
            + ([f"WRONG VERSION: {', '.join(sorted(wrong))}"] if wrong else []))
    print(f"coopcode {carried.get('coopcode', '?')} {'from' if own else 'NOT from'} the carried "
          f"wheels ({len(carried)} packages, transformers {carried.get('transformers')}, "
          f"peft {carried.get('peft')}); from the machine's Python {env_pyver}: {machine}; "
          + verdict)
    return 0 if not (missing or wrong) and own else 1


def _has(name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "carry":
        return carry(Path(argv[1]), argv[2:])
    if len(argv) == 3 and argv[0] == "sizes":
        return sizes(Path(argv[1]), Path(argv[2]))
    if len(argv) == 2 and argv[0] == "verify":
        return verify(Path(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main(sys.argv[1:]))
