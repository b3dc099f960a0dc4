#!/usr/bin/env bash
# CLI checks: help texts, devices (and the one-line no-GPU message), summary, a short training
# run, errors that name the problem. Usage: test_cli.sh path/to/kiln
set -u
K=${1:?usage: test_cli.sh path/to/kiln}
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

# ---- hardening (issue 16): each check failed on main at 40e3030 ----
Q=(--model mlp --data synthetic --limit 64 --batch-size 32 --epochs 1 --verbose 0)
lacks() {   # lacks "description" "pattern" "$out": the output must not match
  if grep -qE -- "$2" <<<"$3"; then bad "$1: $(grep -E -- "$2" <<<"$3" | head -3)"; else ok; fi
}
# 16.2: every numeric option is range-checked by one parser (no wrap, no empty-as-0, no overflow)
expect_fail "--threads 100000 is refused (crashed libgomp)" "--threads wants a whole number from 0 to 1024" "$K" train "${Q[@]}" --threads 100000
expect_fail "--batch-size 4294967297 is refused (ran as batch 1)" "--batch-size wants a whole number" "$K" train "${Q[@]}" --batch-size 4294967297
expect_fail "--epochs= is refused (ran as 0 epochs)" "--epochs wants a whole number" "$K" train "${Q[@]}" --epochs=
expect_fail "--epochs 4294967296 is refused (ran as 0 epochs)" "--epochs wants a whole number" "$K" train "${Q[@]}" --epochs 4294967296
expect_fail "--seed -1 is refused (wrapped)" "--seed wants a whole number" "$K" train "${Q[@]}" --seed -1
expect_fail "--lr inf is refused" "--lr wants a number" "$K" train "${Q[@]}" --lr inf
expect_fail "--limit 99999999999999999999 is refused (ERANGE)" "--limit wants a whole number" "$K" train "${Q[@]}" --limit 99999999999999999999
expect_fail "bench --steps 2147483647 is refused (overflowed: negative images/s)" "--steps wants a whole number from 1 to 1000000" "$K" bench --model mlp --device cpu --batch-size 8 --steps 2147483647
expect_fail "bench --optimizer bogus is refused" "unknown optimizer 'bogus'" "$K" bench --model mlp --device cpu --batch-size 8 --steps 1 --optimizer bogus
# 16.7: an --augment list longer than 255 characters is read whole (was cut silently at 255)
expect_fail "--augment list of 300 characters is read whole" "unknown augmentation 'bogus'" "$K" train "${Q[@]}" --augment "$(printf 'flip,%.0s' {1..51})bogus"

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
