#!/usr/bin/env bash
# Is the single warm start's lower validation (7.5% against the first round's 16.3%) the new
# prompt text or the new adapter? The first round's single warm start, validated on the new
# text exactly as the new one was (compose:val, 40 x 4, seed 0, 256 tokens, reward own).
# Resumable: rerun the same line. NICE=19 beside other work.
set -u
cd "$(dirname "$0")/../../.."
exec nice -n "${NICE:-0}" .venv/bin/coopcode bench --problems compose:val --scheme single \
  --n 4 --k 1 --seed 0 --max-new-tokens 256 --reward own \
  --main-adapter checkpoints/compose-sft-solo-0.5b/main \
  --out runs/divided-fair/solo-text-check </dev/null
