#!/usr/bin/env bash
# One candidate recipe, MAGRPO on the contract pair from its warm start (sft.sh contract):
# 45 steps of 4 compose:train problems, validated on compose:val every 15 steps (40 x 4
# samples), the best validated step kept. Chosen on validation only. Resumable: rerun the
# same line. THREADS=2 when nothing runs beside it (default 1); NICE=19 beside other work.
#   bash docs/divided-fair/scripts/candidate.sh NAME
#   bash docs/divided-fair/scripts/candidate.sh NAME --options   (its recipe's options alone)
set -u
cd "$(dirname "$0")/../../.."
name=$1; shift
pair=checkpoints/compose-warm-pair-0.5b
case "$name" in
  # the anchored recipe: main's rate a third of the helper's, KL to the warm start,
  # advantages divided by the group's std, alike groups sampled again
  anchored) recipe=(--lr 1e-4 --main-lr 3e-5 --kl-coef 0.05 --kl-ref start --std-norm
                    --resample-constant-groups 2) ;;
  # the same without the anchor (what the KL adds)
  no-kl)    recipe=(--lr 1e-4 --main-lr 3e-5 --std-norm --resample-constant-groups 2) ;;
  # the same with one rate for both agents (what main's lower rate adds)
  one-lr)   recipe=(--lr 1e-4 --kl-coef 0.05 --kl-ref start --std-norm
                    --resample-constant-groups 2) ;;
  *) echo "candidate.sh: anchored, no-kl or one-lr, not '$name'" >&2; exit 2 ;;
esac
if [ "${1:-}" = --options ]; then echo "${recipe[*]}"; exit 0; fi
out=runs/divided-fair/candidates/$name
run=(nice -n "${NICE:-0}" .venv/bin/coopcode train --threads "${THREADS:-1}" --sandbox docker)
if [ -f "$out/config.json" ]; then
  exec "${run[@]}" --resume --out "$out" </dev/null
fi
exec "${run[@]}" --algo magrpo --scheme contract --joint aligned --reward own \
  --helper-adapter "$pair/helper" --main-adapter "$pair/main" "${recipe[@]}" \
  --problems compose:train --steps 45 --problems-per-step 4 -G 4 --max-new-tokens 256 \
  --seed 0 --save-every 3 --micro-batch 2 --eval-every 15 --eval-problems compose:val \
  --eval-n 4 --keep-step best --out "$out" "$@" </dev/null
