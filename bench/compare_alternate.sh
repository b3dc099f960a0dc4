#!/usr/bin/env bash
# cifar_cnn training (batch 128, SGD momentum 0.9, synthetic data, as bench/compare_cpu.sh) for
# Kiln and the two strongest peer configurations, alternated for several rounds: on a shared VM
# whose speed moves from minute to minute (README, Performance), each round's ratio compares runs
# made seconds apart, and the median over rounds is the figure to quote.
#   peers: TensorFlow 2.21 without XLA, PyTorch channels_last (eager): the best ones for cifar_cnn
#          training in bench/compare_cpu.sh's runs.
# Usage: bench/compare_alternate.sh [rounds] [threads]    (PRECISION=mixed_bfloat16 for bf16)
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-3}
T=${2:-$(nproc)}
P=${PRECISION:-float32}
M=cifar_cnn
PY=$(scripts/pyenv.sh peers tensorflow-cpu==2.21.* torch numpy) || { echo "compare_alternate: no peers venv" >&2; exit 1; }
kprec=(); [ "$P" != float32 ] && kprec=(--precision "$P")
kargs=(--batch-size 128); pargs=(--batch 128 --steps 40)
get() { grep -o "train_ips=[0-9.]*" | tail -1 | cut -d= -f2; }
echo "# $M training img/s, $P, $T threads, alternated ($(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo
echo "| round | Kiln | TensorFlow (no XLA) | PyTorch channels_last | Kiln / best peer |"
echo "|---|---|---|---|---|"
ratios=()
for r in $(seq 1 "$R"); do
  k=$(build/kiln bench --model "$M" "${kargs[@]}" --steps 40 --device cpu --threads "$T" --infer no "${kprec[@]}" 2>&1 | get)
  tf=$("$PY" bench/peers/tf_cpu.py --model "$M" "${pargs[@]}" --threads "$T" --jit 0 --precision "$P" 2>/dev/null | get)
  pt=$("$PY" bench/peers/torch_cpu.py --model "$M" "${pargs[@]}" --threads "$T" --channels-last 1 --compile 0 --precision "$P" 2>/dev/null | get)
  q=$(awk -v k="$k" -v a="$tf" -v b="$pt" 'BEGIN { m = a > b ? a : b; printf "%.2f", k / m }')
  ratios+=("$q")
  echo "| $r | $k | $tf | $pt | ${q}x |"
done
echo
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "median Kiln / best peer: %.2fx (of %d rounds)\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2, NR }'
