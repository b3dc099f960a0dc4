#!/usr/bin/env bash
# Kiln vs the strongest CPU peers, same models, batches, optimizers and thread count, in one run:
#   TensorFlow 2.21 / Keras 3 (tensorflow-cpu from PyPI, oneDNN inside): jit_compile off and on
#   PyTorch 2.x (torch from PyPI): eager, channels_last, torch.compile
# The peers come from a venv that scripts/pyenv.sh creates (KILN_VENV=DIR reuses one); neither
# README's set-up nor CI installs them.
#   fashion_cnn: real Fashion-MNIST, Adam 1e-3, batch 64, 2 epochs: training images/s (training
#                loop), inference images/s (test set), test accuracy.
#   cifar_cnn:   synthetic 32x32x3, SGD momentum 0.9 lr 0.01, batch 128: training and inference images/s.
# Each metric's ratio is Kiln over the BEST peer configuration for that metric.
# Usage: bench/compare_cpu.sh [threads] [out.md]    (needs build/kiln; PRECISION=mixed_bfloat16 for bf16)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-$(nproc)}
OUT=${2:-}
P=${PRECISION:-float32}
PY=$(scripts/pyenv.sh peers tensorflow-cpu==2.21.* torch numpy) || { echo "compare_cpu: no peers venv" >&2; exit 1; }
DATA=/usr/share/datasets/fashion-mnist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
get() { grep -o " $2=[0-9.]*" "$1" | tail -1 | cut -d= -f2; }
kprec=(); [ "$P" != float32 ] && kprec=(--precision "$P")
tfprec=(--precision "$P")
torch_cfgs=("0 0" "1 0" "0 1")                       # channels_last compile
torchprec=(--precision "$P")                         # mixed_bfloat16: torch.autocast("cpu", torch.bfloat16)
[ "$P" = mixed_float16 ] && torch_cfgs=()            # the torch peer has no CPU float16 autocast

echo "== Kiln ($P)"
build/kiln train --model fashion_cnn --epochs 2 --batch-size 64 --optimizer adam --lr 0.001 --threads "$T" \
  --seed 1 --history "$tmp/h.csv" --verbose 2 "${kprec[@]}" > "$tmp/kf.txt"
k_f_train=$(awk -F, 'NR==1 { for (i = 1; i <= NF; i++) if ($i == "images_per_sec") c = i }
                     NR>1 { s += $c; n++ } END { printf "%.1f", s / n }' "$tmp/h.csv")
k_f_acc=$(grep -o "Test accuracy: [0-9.]*" "$tmp/kf.txt" | awk '{print $3}')
build/kiln bench --model fashion_cnn --batch-size 64 --optimizer adam --steps 5 --device cpu --threads "$T" "${kprec[@]}" > "$tmp/kfi.txt"
k_f_inf=$(grep -o "infer_ips=[0-9.]*" "$tmp/kfi.txt" | tail -1 | cut -d= -f2)
build/kiln bench --model cifar_cnn --batch-size 128 --steps 40 --device cpu --threads "$T" "${kprec[@]}" > "$tmp/kc.txt"
k_c_train=$(grep -o "train_ips=[0-9.]*" "$tmp/kc.txt" | tail -1 | cut -d= -f2)
k_c_inf=$(grep -o "infer_ips=[0-9.]*" "$tmp/kc.txt" | tail -1 | cut -d= -f2)
echo "   fashion train $k_f_train infer $k_f_inf acc $k_f_acc | cifar train $k_c_train infer $k_c_inf"

# peers: one RESULT line per configuration, collected in $tmp/fashion.txt and $tmp/cifar.txt
peer() {   # peer NAME SCRIPT ARGS...
  local name=$1 script=$2; shift 2
  for m in fashion_cnn cifar_cnn; do
    local margs=(--model "$m" --batch 64 --epochs 2 --data "$DATA")
    [ "$m" = cifar_cnn ] && margs=(--model "$m" --batch 128 --steps 40)
    if line=$("$PY" "bench/peers/$script" "${margs[@]}" --threads "$T" "$@" 2>"$tmp/err.txt" | grep '^RESULT'); then
      echo "$name $line" | tee -a "$tmp/${m%%_*}.txt"
    else
      echo "$name: failed ($(tail -1 "$tmp/err.txt"))" | tee -a "$tmp/failed.txt"
    fi
  done
}
echo "== TensorFlow ($P)"
for jit in 0 1; do peer "tensorflow-jit$jit" tf_cpu.py --jit "$jit" "${tfprec[@]}"; done
echo "== PyTorch ($P)"
for c in "${torch_cfgs[@]}"; do
  set -- $c
  peer "torch-cl$1-compile$2" torch_cpu.py --channels-last "$1" --compile "$2" "${torchprec[@]}"
done

best() {   # best FILE KEY -> "value config"
  [ -f "$1" ] || { echo "0 none"; return; }
  awk -v k="$2" '{ for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) { v = substr($i, length(k) + 2) + 0;
                   if (v > b) { b = v; c = $1 } } } END { printf "%.1f %s\n", b, c }' "$1"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
row() {    # row LABEL KILN FILE KEY
  read -r v c < <(best "$3" "$4")
  echo "| $1 | $2 | $v ($c) | $(ratio "$2" "$v") |"
}
report() {
  echo "# Kiln vs TensorFlow / PyTorch on the CPU ($(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $T threads, $P)"
  echo
  echo "Command: bench/compare_cpu.sh $T   (TensorFlow $("$PY" -c 'import tensorflow as t; print(t.__version__)' 2>/dev/null), PyTorch $("$PY" -c 'import torch; print(torch.__version__)'))"
  echo
  echo "| model, metric | Kiln | best peer (configuration) | Kiln / best |"
  echo "|---|---|---|---|"
  row "fashion_cnn b64 Adam, train img/s" "$k_f_train" "$tmp/fashion.txt" train_ips
  row "fashion_cnn b64, infer img/s" "$k_f_inf" "$tmp/fashion.txt" infer_ips
  row "cifar_cnn b128 SGDm, train img/s" "$k_c_train" "$tmp/cifar.txt" train_ips
  row "cifar_cnn b128, infer img/s" "$k_c_inf" "$tmp/cifar.txt" infer_ips
  echo
  echo "fashion_cnn 2 epochs test accuracy: Kiln $k_f_acc%; peers: $(grep -o '^[^ ]*\|test_acc=[0-9.]*' "$tmp/fashion.txt" 2>/dev/null | paste -sd' ' | sed 's/ test_acc=/ /g')"
  echo
  echo "Every peer configuration:"
  echo '```'
  cat "$tmp/fashion.txt" "$tmp/cifar.txt" "$tmp/failed.txt" 2>/dev/null || true   # failed.txt: only when a peer failed
  echo '```'
}
report
[ -n "$OUT" ] && report > "$OUT"
exit 0
