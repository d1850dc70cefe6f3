#!/usr/bin/env bash
# A final run: the recipe chosen on validation (docs/divided-fair/recipe.txt, one line of
# `coopcode train` options, written once the candidates are in), unchanged for every row:
# MAGRPO on the contract pair from the pair's warm start, or GRPO (one agent) from the single
# agent's, seeds 0-2, 45 steps of 4 compose:train problems (each problem once; the
# candidates' length: 90 would pass the plan's CPU hours, RECORD.md 2026-12-05),
# validated on compose:val every 15 steps (40 x 4), the best validated step kept.
# Resumable: rerun the same line. A run not finished by a session's end is carried in git
# (docs/divided/scripts/carry_run.sh pack runs/divided-fair/final-runs/ROW
#  docs/divided-fair/carried/ROW) and unpacked here on a machine without it.
#   bash docs/divided-fair/scripts/final.sh magrpo-seed0 | ... | grpo-seed2
# THREADS=2 when nothing runs beside it (default 1); NICE=19 beside other work.
set -u
cd "$(dirname "$0")/../../.."
row=$1
recipe_file=docs/divided-fair/recipe.txt
[ -f "$recipe_file" ] || { echo "final.sh: no $recipe_file yet: choose the recipe first" >&2; exit 2; }
read -r -a recipe < "$recipe_file"
case "$row" in
  magrpo-seed[012]) seed=${row#magrpo-seed}; pair=checkpoints/compose-warm-pair-0.5b
                    what=(--algo magrpo --scheme contract --joint aligned
                          --helper-adapter "$pair/helper" --main-adapter "$pair/main") ;;
  grpo-seed[012])   seed=${row#grpo-seed}; solo=checkpoints/compose-warm-solo-0.5b
                    what=(--algo grpo --scheme single --main-adapter "$solo/main") ;;
  *) echo "final.sh: magrpo-seed0..2 or grpo-seed0..2, not '$row'" >&2; exit 2 ;;
esac
out=runs/divided-fair/final-runs/$row
carried=docs/divided-fair/carried/$row
if [ ! -f "$out/config.json" ] && [ -f "$carried/config.json" ]; then
  bash docs/divided/scripts/carry_run.sh unpack "$carried" "$out" || exit 1
fi
run=(nice -n "${NICE:-0}" .venv/bin/coopcode train --threads "${THREADS:-1}" --sandbox docker)
if [ -f "$out/config.json" ]; then
  exec "${run[@]}" --resume --out "$out" </dev/null
fi
exec "${run[@]}" "${what[@]}" "${recipe[@]}" --reward own --problems compose:train \
  --steps 45 --problems-per-step 4 -G 4 --max-new-tokens 256 --seed "$seed" --save-every 3 \
  --micro-batch 2 --eval-every 15 --eval-problems compose:val --eval-n 4 --keep-step best \
  --out "$out" </dev/null
