#!/usr/bin/env bash
# Create the virtualenv and install coopcode into it. Idempotent.
set -euo pipefail
venv=${1:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
pip() { "$venv/bin/python" -m pip "$@"; }
# torch first, pinned: a bare `torch` (or a range admitting a newer release) would pull a
# multi-GB CUDA build on machines without a GPU. The package keeps a range 2.13.0 satisfies.
if ! "$venv/bin/python" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
    pip install --disable-pip-version-check -q torch==2.13.0
fi
# The exact versions CI last passed with (constraints.txt): a release made since cannot
# break a fresh install. pyproject.toml keeps the ranges for users who install the package.
pip install --disable-pip-version-check -q -c constraints.txt -e ".[dev,docs]"
