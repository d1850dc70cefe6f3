#!/usr/bin/env bash
# One candidate recipe on compose:train (a third of the final budget: 45 steps of 4
# problems, each problem once), validated on compose:val every 15 steps (40 x 2 samples).
# Resumable: rerun the same line. THREADS=2 when nothing runs beside it (default 1).
#   bash docs/divided/scripts/candidate.sh NAME [more train options]
#   e.g. candidate.sh cold
#        candidate.sh warm --helper-adapter runs/divided/sft-pair --main-adapter runs/divided/sft-pair
set -u
cd "$(dirname "$0")/../../.."
name=$1; shift
out=runs/divided/candidates/$name
if [ -f "$out/config.json" ]; then
  exec .venv/bin/coopcode train --resume --out "$out" --threads "${THREADS:-1}" --sandbox docker </dev/null
fi
exec .venv/bin/coopcode train --algo magrpo --scheme contract --reward own --problems compose:train \
  --steps 45 --problems-per-step 4 -G 4 --lr 1e-4 --max-new-tokens 256 --seed 0 --save-every 3 \
  --micro-batch 2 --eval-every 15 --eval-problems compose:val --eval-n 2 --threads "${THREADS:-1}" \
  --sandbox docker \
  --out "$out" "$@" </dev/null
