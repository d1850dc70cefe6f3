#!/usr/bin/env bash
# Table 2 again, compared fairly: the untrained baselines on compose:test once each, with the
# set's new text (every scheme is shown aux's examples) and the `own` reward that pays a
# well-formed part only. n=10 at the table's temperature (0.8), each scheme its own run,
# resumable (rerun to continue); a finished one is copied into docs/divided-fair/baselines/
# by keep.sh. NICE=19 runs it beside other work without slowing it.
#   bash docs/divided-fair/scripts/baselines.sh [SCHEME ...]   (default: all four)
set -u
cd "$(dirname "$0")/../../.."
for s in ${@:-single sequential contract plan}; do
  nice -n "${NICE:-0}" .venv/bin/coopcode bench --problems compose:test --scheme "$s" --n 10 \
    --k 1,3,5,10 --reward own --sandbox docker --out "runs/divided-fair/$s" </dev/null || exit 1
done
