#!/usr/bin/env bash
# The warm starts again, on the set's new text (every scheme is shown aux's examples): the
# contract pair (or, with `single`, one agent) fine-tuned on compose:train's canonical code,
# one epoch (45 steps of 4 examples), validated on compose:val before and after (40 x 4).
# Resumable: rerun the same line. THREADS=2 when nothing runs beside it; NICE=19 beside work.
#   bash docs/divided-fair/scripts/sft.sh contract     -> runs/divided-fair/sft-pair
#   bash docs/divided-fair/scripts/sft.sh single       -> runs/divided-fair/sft-solo
# each then kept (adapters and record) as checkpoints/compose-warm-pair-0.5b, compose-warm-solo-0.5b:
#   bash docs/divided-fair/scripts/keep_checkpoint.sh runs/divided-fair/sft-pair checkpoints/compose-warm-pair-0.5b
set -u
cd "$(dirname "$0")/../../.."
scheme=$1
case "$scheme" in
  contract) out=runs/divided-fair/sft-pair ;;
  single)   out=runs/divided-fair/sft-solo ;;
  *) echo "sft.sh: contract or single, not '$scheme'" >&2; exit 2 ;;
esac
examples=runs/divided-fair/compose-train-sft.jsonl
mkdir -p runs/divided-fair
[ -f "$examples" ] || .venv/bin/coopcode problems sft-examples compose:train --out "$examples"
run=(nice -n "${NICE:-0}" .venv/bin/coopcode train --threads "${THREADS:-1}" --sandbox docker)
if [ -f "$out/config.json" ]; then
  exec "${run[@]}" --resume --out "$out" </dev/null
fi
exec "${run[@]}" --algo sft --problems compose:train --examples "$examples" \
  --scheme "$scheme" --steps 45 --rollout-batch 4 --lr 1e-4 --micro-batch 2 --seed 0 \
  --save-every 5 --eval-every 45 --eval-problems compose:val --eval-n 4 --keep-step last \
  --out "$out" </dev/null
