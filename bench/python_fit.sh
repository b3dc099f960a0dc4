#!/usr/bin/env bash
# Python model.fit speed: one Keras-style script (bench/peers/keras_fit.py) under Kiln's Python
# package (`import kiln as tf`) and TensorFlow 2.21 (`import tensorflow as tf`), PyTorch's eager
# loop on the same model (bench/peers/torch_cpu.py), and `kiln train` on the same model and data,
# alternated for several rounds (this VM's speed moves from minute to minute: only runs seconds
# apart compare); medians per framework. Training images/s of the last epoch.
#   fashion_cnn: real Fashion-MNIST, Adam, batch 64;  cifar_cnn: synthetic, SGD momentum, batch 128
# Usage: bench/python_fit.sh [rounds] [threads]
#   KILN_PY: a python that imports kiln (default: a venv with the checkout pip-installed into it)
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-3}
T=${2:-$(nproc)}
TF_PY=$(scripts/pyenv.sh peers tensorflow-cpu==2.21.* torch numpy) || { echo "python_fit: no peers venv" >&2; exit 1; }
if [ -z "${KILN_PY:-}" ]; then
  KILN_PY=$(scripts/pyenv.sh kiln-bench numpy) || { echo "python_fit: no venv for kiln" >&2; exit 1; }
  "$KILN_PY" -m pip install -q --disable-pip-version-check . >&2
fi
[ -x build/kiln ] || bash scripts/build.sh >/dev/null
get() { grep -o "train_ips=[0-9.]*" | tail -1 | cut -d= -f2; }
last_epoch() { grep -o "[0-9.]* img/s" | tail -1 | cut -d' ' -f1; }
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "# model.fit from Python, training img/s of the last of 2 epochs, $T threads, alternated $R rounds ($(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo
echo "| model | Kiln Python | kiln train | TensorFlow 2.21 Python | PyTorch eager | Kiln Python / TF | Kiln Python / kiln train |"
echo "|---|---|---|---|---|---|---|"
for m in fashion_cnn cifar_cnn; do
  kp=() kt=() tf=() pt=()
  if [ $m = fashion_cnn ]; then data=(--batch-size 64); limit=(); targs=(--batch 64 --epochs 2)
  else data=(--data synthetic --limit 5120 --optimizer momentum --lr 0.01 --batch-size 128); limit=(--limit 5120); targs=(--batch 128 --steps 40); fi
  for r in $(seq 1 "$R"); do
    kp+=("$(cd bench/peers && "$KILN_PY" keras_fit.py --framework kiln --model $m --threads "$T" "${limit[@]}" 2>/dev/null | get)")
    kt+=("$(build/kiln train --model $m "${data[@]}" --epochs 2 --threads "$T" --verbose 2 2>/dev/null | last_epoch)")
    tf+=("$(cd bench/peers && "$TF_PY" keras_fit.py --framework tensorflow --model $m --threads "$T" "${limit[@]}" 2>/dev/null | get)")
    pt+=("$("$TF_PY" bench/peers/torch_cpu.py --model $m "${targs[@]}" --threads "$T" --channels-last 1 --compile 0 2>/dev/null | get)")
    echo "round $r $m: kiln-python ${kp[-1]} kiln-train ${kt[-1]} tensorflow ${tf[-1]} torch ${pt[-1]}" >&2
  done
  a=$(printf '%s\n' "${kp[@]}" | med) b=$(printf '%s\n' "${kt[@]}" | med) c=$(printf '%s\n' "${tf[@]}" | med) d=$(printf '%s\n' "${pt[@]}" | med)
  echo "| $m | $a | $b | $c | $d | $(awk -v x="$a" -v y="$c" 'BEGIN { printf "%.2fx", x / y }') | $(awk -v x="$a" -v y="$b" 'BEGIN { printf "%.3f", x / y }') |"
done
