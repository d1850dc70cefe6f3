"""The experiments' own code, kept beside their data outside the installed package (Table 2's
builder in docs/divided/, the compose set's build in scripts/), imported as its scripts
import it: from its folder."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent


def load(path: str) -> ModuleType:
    """The module at `path` (from the repository's root), under its file's name, with its
    folder on sys.path so that its imports of the files beside it resolve as in a script."""
    file = REPO / path
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    module = importlib.import_module(file.stem)
    if Path(module.__file__ or "") != file:
        raise ImportError(f"{file.stem} is {module.__file__}, not {file}: rename one of them")
    return module
