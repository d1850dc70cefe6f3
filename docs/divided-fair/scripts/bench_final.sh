#!/usr/bin/env bash
# Bench a finished final run once, at the step it kept (its run folder's helper/ and main/),
# as the baselines were benched (n=10, T=0.8), each resumable (rerun to continue):
#   - compose:test with the trained agents (the pair under `contract`, GRPO's one agent
#     under `single`)                                      -> runs/divided-fair/final/ROW
#   - a pair's main agent alone on compose:test (`single`)  -> runs/divided-fair/final/ROW-main
#   - the trained main agent alone on humaneval:test (`single`), to pair with the untrained
#     single model there (docs/coop/samples/single: no reward named, 384 new tokens)
#                                                          -> runs/divided-fair/humaneval/ROW
# Or a warm start, once: `warm-pair` (contract) or `warm-solo` (single) -> runs/divided-fair/warm/...
# Then docs/divided/scripts/keep.sh copies each into docs/divided-fair/.
#   bash docs/divided-fair/scripts/bench_final.sh magrpo-seed0 | ... | grpo-seed2 | warm-pair | warm-solo
set -u
cd "$(dirname "$0")/../../.."
row=$1
bench() { nice -n "${NICE:-0}" .venv/bin/coopcode bench --n 10 --k 1,3,5,10 --sandbox docker "$@" </dev/null; }
case "$row" in
  warm-pair) bench --problems compose:test --reward own --scheme contract \
               --helper-adapter checkpoints/compose-warm-pair-0.5b/helper \
               --main-adapter checkpoints/compose-warm-pair-0.5b/main --out runs/divided-fair/warm/pair
             exit ;;
  warm-solo) bench --problems compose:test --reward own --scheme single \
               --main-adapter checkpoints/compose-warm-solo-0.5b/main --out runs/divided-fair/warm/solo
             exit ;;
  magrpo-seed[012]|grpo-seed[012]) ;;
  *) echo "bench_final.sh: magrpo-seed0..2, grpo-seed0..2, warm-pair or warm-solo, not '$row'" >&2; exit 2 ;;
esac
# The kept step's adapters: the copy kept in git (checkpoints/compose-fair-ROW-0.5b), which
# every machine has, else the finished run folder (run_record.py bench-folder).
run=$(.venv/bin/python docs/divided-fair/run_record.py bench-folder "$row") || exit 2
if [ "${row%%-*}" = grpo ]; then
  bench --problems compose:test --reward own --scheme single --main-adapter "$run/main" \
    --out "runs/divided-fair/final/$row" || exit
else
  bench --problems compose:test --reward own --scheme contract --helper-adapter "$run/helper" \
    --main-adapter "$run/main" --out "runs/divided-fair/final/$row" || exit
  bench --problems compose:test --reward own --scheme single --main-adapter "$run/main" \
    --out "runs/divided-fair/final/$row-main" || exit
fi
bench --problems humaneval:test --scheme single --main-adapter "$run/main" --max-new-tokens 384 \
  --out "runs/divided-fair/humaneval/$row"
