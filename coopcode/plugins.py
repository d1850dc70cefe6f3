"""Your own schemes, rewards and engines for the command line and the TUI: one module that
registers them (`register_scheme`, `register_reward`, `register_engine`, all exported from
`coopcode`), named in `COOPCODE_PLUGINS` (comma-separated module names or .py files) or
installed under the `coopcode.plugins` entry-point group. Every `coopcode` command imports
them first, so `--scheme`, `--reward`, `--engine` (and the engine's own options), `train`
and the TUI's lists know what they register; the processes a command starts (training
ranks, the TUI's jobs) inherit the variable and import them too."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path

from coopcode.core.errors import UserError

ENV = "COOPCODE_PLUGINS"
GROUP = "coopcode.plugins"
_loaded: set[str] = set()


def plugin_names() -> list[str]:
    """The plugins named in COOPCODE_PLUGINS, then those installed as entry points."""
    named = [n.strip() for n in os.environ.get(ENV, "").split(",") if n.strip()]
    return named + [ep.module for ep in entry_points(group=GROUP)]  # its module registers


def load_plugins() -> list[str]:
    """Import every plugin once (what it registers is then known); UserError, one line, for
    one that cannot be found or fails to import."""
    done = []
    for name in plugin_names():
        if name in _loaded:
            continue
        try:
            if name.endswith(".py"):
                _import_file(Path(name).expanduser())
            else:
                importlib.import_module(name)
        except UserError:
            raise
        except Exception as e:  # a plugin's own bug: named, in one line
            raise UserError(f"plugin {name} ({ENV}): {type(e).__name__}: {e}") from None
        _loaded.add(name)
        done.append(name)
    return done


def _import_file(path: Path) -> None:
    if not path.is_file():
        raise UserError(f"plugin {path} ({ENV}): no such file")
    module_name = f"coopcode_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
