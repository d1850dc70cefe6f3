#!/usr/bin/env bash
# The warm start: the contract pair (or, with `single`, one agent) fine-tuned on
# compose:train's canonical code, one epoch (45 steps of 4 examples), validated on
# compose:val before and after. Resumable: rerun the same line.
#   bash docs/divided/scripts/sft.sh contract runs/divided/sft-pair   (the pair's)
#   bash docs/divided/scripts/sft.sh single runs/divided/sft-solo     (GRPO's one agent)
# each then kept as checkpoints/compose-sft-pair-0.5b, compose-sft-solo-0.5b (keep_checkpoint.sh)
# THREADS=2 when nothing runs beside it (default 1).
set -u
cd "$(dirname "$0")/../../.."
scheme=$1; out=$2
examples=runs/divided/compose-train-sft.jsonl
[ -f "$examples" ] || .venv/bin/coopcode problems sft-examples compose:train --out "$examples"
if [ -f "$out/config.json" ]; then
  exec .venv/bin/coopcode train --resume --out "$out" --threads "${THREADS:-1}" --sandbox docker </dev/null
fi
exec .venv/bin/coopcode train --algo sft --problems compose:train --examples "$examples" \
  --scheme "$scheme" --steps 45 --rollout-batch 4 --lr 1e-4 --micro-batch 2 --seed 0 \
  --save-every 5 --eval-every 45 --eval-problems compose:val --eval-n 2 --threads "${THREADS:-1}" \
  --sandbox docker --out "$out" </dev/null
