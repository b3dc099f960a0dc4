#!/usr/bin/env bash
# CLI checks: help texts, devices (and the one-line no-GPU message), summary, a short training
# run, errors that name the problem. Usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]
set -u
K=${1:?usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]}
SIM=${2:-}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect() {   # expect "description" "pattern" command... : exit status 0 and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 600 <<<"$out")"; fi
}
expect_fail() {   # non-zero exit and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 600 <<<"$out")"; fi
}

expect "kiln --help" "commands:" "$K" --help
expect "kiln --version" "^kiln [0-9]" "$K" --version
for c in train eval predict summary devices bench; do expect "kiln $c --help" "usage: kiln $c" "$K" "$c" --help; done
expect_fail "unknown command" "unknown command" "$K" frobnicate
expect "devices lists the CPU" "/device:CPU:0" "$K" devices
expect "devices says whether a GPU is there" "GPU available: (yes|no \(.+\))" "$K" devices
CUDA_VISIBLE_DEVICES= expect "CUDA_VISIBLE_DEVICES= hides GPUs" "GPU available: no \(CUDA_VISIBLE_DEVICES is empty" "$K" devices
if [ -n "$SIM" ]; then   # two simulated GPUs: both listed, each with its own index
  out=$(CUSIM_DEVICES=2 KILN_CUDA_MODULE="$SIM" "$K" devices 2>&1)
  if grep -q "^/device:GPU:0  Kiln CUDA simulator" <<<"$out" && grep -q "^/device:GPU:1  Kiln CUDA simulator" <<<"$out" &&
     [ "$(grep -c "^/device:GPU:" <<<"$out")" -eq 2 ] && grep -q "GPU available: yes" <<<"$out"; then ok
  else bad "devices with CUSIM_DEVICES=2 should list GPU:0 and GPU:1: $out"; fi
  CUSIM_DEVICES=0 KILN_CUDA_MODULE="$SIM" expect "no simulated GPU: says why" "GPU available: no \(cudaGetDeviceCount: no CUDA-capable device" "$K" devices
fi
expect "summary counts fashion_cnn's parameters" "421,?642" "$K" summary --model fashion_cnn
expect_fail "missing dataset names the apt-get package" "apt-get install dataset-fashion-mnist" "$K" train --data "$tmp/none" --epochs 1
expect_fail "missing checkpoint names the file" "$tmp/none.safetensors" "$K" eval --load "$tmp/none.safetensors" --data synthetic
expect_fail "bad option" "unknown option" "$K" train --frobnicate 3

# a short run on synthetic data: trains, saves, says once why there is no GPU (when there is none)
out=$("$K" train --model mlp --data synthetic --epochs 1 --limit 2048 --batch-size 64 --save "$tmp/m.safetensors" --history "$tmp/h.csv" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "Test accuracy" <<<"$out"; then ok; else bad "short training run (rc $rc): $out"; fi
if "$K" devices | grep -q "GPU available: no"; then
  n=$(grep -c "no GPU used" <<<"$out")
  [ "$n" -eq 1 ] && ok || bad "the no-GPU line should appear exactly once, got $n: $out"
fi
head -1 "$tmp/h.csv" | grep -q "^epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec" && ok || bad "history header: $(head -1 "$tmp/h.csv")"
[ "$(wc -l < "$tmp/h.csv")" -eq 2 ] && ok || bad "history rows"
expect "eval of the saved model" "accuracy" "$K" eval --load "$tmp/m.safetensors" --data synthetic
expect_fail "checkpoint of another model is refused, naming a tensor" "conv2d|dense|missing|shape" "$K" eval --load "$tmp/m.safetensors" --model fashion_cnn --data synthetic
expect "bench runs on the CPU" "RESULT peer=kiln model=mlp device=cpu" "$K" bench --model mlp --batch-size 32 --steps 3 --device cpu
KILN_LOG_DEVICE_PLACEMENT=1 expect "placement log" "MatMul: \(MatMul\): /device:(CPU|GPU):0" "$K" train --model mlp --data synthetic --epochs 1 --limit 256 --batch-size 64

expect "--data-on-device trains (host memory without a GPU)" "Test accuracy" "$K" train --model fashion_cnn --data synthetic --epochs 1 --limit 256 --batch-size 64 --data-on-device --augment crop,flip
# without augmentation, resident data trains on the very batches of the host pipeline
acc_of() { "$K" train --model fashion_cnn --data synthetic --epochs 2 --limit 256 --batch-size 32 --seed 5 "$@" 2>&1 | grep -E "Test accuracy"; }
a_host=$(acc_of); a_res=$(acc_of --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline: '$a_host' vs '$a_res'"; fi
# with crop and flip too: the device draws each example's crop/flip from the host augment's key
a_host=$(acc_of --augment flip,crop); a_res=$(acc_of --augment flip,crop --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline with --augment flip,crop: '$a_host' vs '$a_res'"; fi
expect_fail "--data-on-device refuses cutout" "not cutout" "$K" train --model fashion_cnn --data synthetic --epochs 1 --limit 256 --data-on-device --augment cutout

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
