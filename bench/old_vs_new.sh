#!/usr/bin/env bash
# Two Kiln binaries (say, main before and after a change) alternated back to back on the CPU:
# `kiln bench` (training steps on in-memory synthetic data: the step) and `kiln train` (the fit
# loop with its pipeline: its "training loop ... images/s" figure, evaluation and loading apart) for fashion_cnn and cifar_cnn, several rounds, medians per binary. On a
# shared VM whose speed moves from minute to minute, only runs seconds apart compare.
# Usage: bench/old_vs_new.sh OLD_KILN NEW_KILN [rounds]
set -euo pipefail
OLD=$1 NEW=$2 R=${3:-5}
cd "$(dirname "$0")/.."
ips() { grep -o "train_ips=[0-9.]*" | tail -1 | cut -d= -f2; }
fit_ips() { grep -o "training loop [0-9.]* s, [0-9.]* images/s" | awk '{ print $5 }'; }   # the fit loop alone
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A res
cases="bench:fashion_cnn bench:cifar_cnn train:fashion_cnn train:cifar_cnn"
for r in $(seq 1 "$R"); do
  for c in $cases; do
    kind=${c%%:*} m=${c#*:}
    for b in old new; do
      bin=$OLD; [ $b = new ] && bin=$NEW
      if [ "$kind" = bench ]; then
        v=$("$bin" bench --model "$m" --steps 40 --device cpu --infer no 2>&1 | ips)
      elif [ "$m" = fashion_cnn ]; then
        v=$("$bin" train --epochs 2 --limit 12000 --verbose 0 2>&1 | fit_ips)
      else
        v=$("$bin" train --model cifar_cnn --data synthetic --limit 1536 --epochs 3 --verbose 0 2>&1 | fit_ips)
      fi
      res[$c:$b]+="$v "
    done
  done
  echo "round $r done" >&2
done
echo "| case | old img/s (median of $R) | new img/s | new / old |"
echo "|---|---|---|---|"
for c in $cases; do
  o=$(echo ${res[$c:old]} | tr ' ' '\n' | med); n=$(echo ${res[$c:new]} | tr ' ' '\n' | med)
  echo "| $c | $o | $n | $(awk -v a="$o" -v b="$n" 'BEGIN { printf "%.3f", b / a }') |"
  echo "  old: ${res[$c:old]}  new: ${res[$c:new]}" >&2
done
