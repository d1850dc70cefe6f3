#!/usr/bin/env bash
# Issue 41's untrained baselines on compose:test, once each: n=10 at the table's temperature
# (0.8), each scheme its own run, resumable (rerun to continue). Then keep.sh copies a
# finished one into docs/divided/baselines/<scheme>/.
#   bash docs/divided/scripts/baselines.sh [SCHEME ...]   (default: all four)
set -u
cd "$(dirname "$0")/../../.."
for scheme in "${@:-contract single plan sequential}"; do
  for s in $scheme; do
    .venv/bin/coopcode bench --problems compose:test --scheme "$s" --n 10 --k 1,3,5,10 \
      --reward own --sandbox docker --out "runs/divided/$s" </dev/null
  done
done
