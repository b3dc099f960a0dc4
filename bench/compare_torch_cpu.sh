#!/usr/bin/env bash
# Kiln vs PyTorch on the CPU, same models, batches, optimizers and thread count, in one run.
#   fashion_cnn: real Fashion-MNIST, Adam 1e-3, batch 64, 2 epochs: training images/s (training
#                loop), inference images/s, test accuracy.
#   cifar_cnn:   synthetic 32x32x3, SGD momentum 0.9 lr 0.01, batch 128: training and inference images/s.
# PyTorch runs as shipped and with glibc malloc tuned; ratios are against the faster of the two.
# Usage: bench/compare_torch_cpu.sh [threads] [out.md]    (needs build/kiln and python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-$(nproc)}
OUT=${2:-}
PY=/usr/bin/python3
DATA=/usr/share/datasets/fashion-mnist
TUNED="MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
get() { grep -o "$2=[0-9.]*" "$1" | tail -1 | cut -d= -f2; }

echo "== fashion_cnn: Kiln (2 epochs, real data)"
build/kiln train --model fashion_cnn --epochs 2 --batch-size 64 --optimizer adam --lr 0.001 --threads "$T" \
  --seed 1 --history "$tmp/h.csv" --verbose 2 | tee "$tmp/kf.txt"
k_f_train=$(awk -F, 'NR>1 { s += $8; n++ } END { printf "%.1f", s / n }' "$tmp/h.csv")
k_f_acc=$(grep -o "Test accuracy: [0-9.]*" "$tmp/kf.txt" | awk '{print $3}')
build/kiln bench --model fashion_cnn --batch-size 64 --optimizer adam --steps 5 --device cpu --threads "$T" > "$tmp/kfi.txt"
k_f_inf=$(get "$tmp/kfi.txt" infer_ips)
echo "== fashion_cnn: PyTorch as shipped / malloc-tuned"
$PY bench/peers/torch_cpu.py --model fashion_cnn --data "$DATA" --epochs 2 --batch 64 --threads "$T" | tee "$tmp/tf1.txt"
env $TUNED $PY bench/peers/torch_cpu.py --model fashion_cnn --data "$DATA" --epochs 2 --batch 64 --threads "$T" | tee "$tmp/tf2.txt"

echo "== cifar_cnn: Kiln / PyTorch as shipped / malloc-tuned"
build/kiln bench --model cifar_cnn --batch-size 128 --steps 40 --device cpu --threads "$T" | tee "$tmp/kc.txt"
$PY bench/peers/torch_cpu.py --model cifar_cnn --batch 128 --steps 40 --threads "$T" | tee "$tmp/tc1.txt"
env $TUNED $PY bench/peers/torch_cpu.py --model cifar_cnn --batch 128 --steps 40 --threads "$T" | tee "$tmp/tc2.txt"

best() { awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
t_f_train=$(best "$(get "$tmp/tf1.txt" train_ips)" "$(get "$tmp/tf2.txt" train_ips)")
t_f_inf=$(best "$(get "$tmp/tf1.txt" infer_ips)" "$(get "$tmp/tf2.txt" infer_ips)")
t_f_acc1=$(get "$tmp/tf1.txt" test_acc); t_f_acc2=$(get "$tmp/tf2.txt" test_acc)
k_c_train=$(get "$tmp/kc.txt" train_ips); k_c_inf=$(get "$tmp/kc.txt" infer_ips)
t_c_train=$(best "$(get "$tmp/tc1.txt" train_ips)" "$(get "$tmp/tc2.txt" train_ips)")
t_c_inf=$(best "$(get "$tmp/tc1.txt" infer_ips)" "$(get "$tmp/tc2.txt" infer_ips)")

report() {
  echo "# Kiln vs PyTorch on the CPU ($(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $T threads)"
  echo
  echo "Command: bench/compare_torch_cpu.sh $T   (PyTorch $($PY -c 'import torch; print(torch.__version__)'), OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset})"
  echo
  echo "| model | metric | Kiln | PyTorch (best of shipped / malloc-tuned) | ratio |"
  echo "|---|---|---|---|---|"
  echo "| fashion_cnn b64 Adam | train img/s | $k_f_train | $t_f_train | $(ratio "$k_f_train" "$t_f_train") |"
  echo "| fashion_cnn b64 | infer img/s | $k_f_inf | $t_f_inf | $(ratio "$k_f_inf" "$t_f_inf") |"
  echo "| fashion_cnn 2 epochs | test accuracy % | $k_f_acc | $t_f_acc1 / $t_f_acc2 | |"
  echo "| cifar_cnn b128 SGDm | train img/s | $k_c_train | $t_c_train | $(ratio "$k_c_train" "$t_c_train") |"
  echo "| cifar_cnn b128 | infer img/s | $k_c_inf | $t_c_inf | $(ratio "$k_c_inf" "$t_c_inf") |"
}
report
[ -n "$OUT" ] && report > "$OUT"
exit 0
