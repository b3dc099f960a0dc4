#!/usr/bin/env bash
# The memory cures and numeric checks through the CLI: kiln train --accumulate (same training as
# the whole batch), the training-step memory table of kiln summary --batch-size, --batch-size auto
# with --memory-limit, --debug-numerics and the NaN error. Usage: test_memfit.sh path/to/kiln
set -u
K=${1:?usage: test_memfit.sh path/to/kiln}
pass=0 fail=0
source "$(dirname "$0")/lib.sh"   # ok, bad, expect, expect_fail

expect "train --help: --accumulate" "--accumulate N" "$K" train --help
expect "train --help: --batch-size auto" "--batch-size auto" "$K" train --help
expect "train --help: --debug-numerics" "--debug-numerics" "$K" train --help
expect "summary --help: --batch-size" "--batch-size B" "$K" summary --help

# a model without dropout or batch norm: 4 micro-batches train as the whole batch (f32 rounding)
Q=(--model fashion_cnn --data synthetic --limit 128 --epochs 1 --batch-size 32 --optimizer sgd --verbose 0 --threads 2 --prefetch 0 --seed 3)
whole=$("$K" train "${Q[@]}" 2>&1 | grep "Test accuracy")
acc=$("$K" train "${Q[@]}" --accumulate 4 2>&1 | grep "Test accuracy")
if [ -n "$whole" ] && [ "$whole" = "$acc" ]; then ok; else bad "--accumulate 4 vs the whole batch: '$acc' vs '$whole'"; fi
expect "--accumulate says what it does" "runs 4 micro-batches of 8, one update" "$K" train "${Q[@]}" --accumulate 4
expect_fail "batch not divisible by --accumulate" "--batch-size 30 is not divisible by --accumulate 4.*e.g. --batch-size 32" "$K" train "${Q[@]}" --batch-size 30 --accumulate 4

# the memory table, from the plan: per layer, then the peak; accumulation lowers it
expect "summary --batch-size prints the memory table" "conv2d \(Conv2D\) +320 .*KiB" "$K" summary --model fashion_cnn --batch-size 64
peak() { "$K" summary --model fashion_cnn --batch-size 64 "$@" 2>/dev/null | sed -n 's/^Peak of the planned training step: .* MiB (\([0-9]*\) bytes).*/\1/p'; }
p1=$(peak); p4=$(peak --accumulate 4)
if [ -n "$p1" ] && [ -n "$p4" ] && [ "$p4" -lt "$p1" ]; then ok; else bad "peak with --accumulate 4 ($p4) should be below the whole batch's ($p1)"; fi
expect "summary --accumulate lists the accumulators" "Gradient accumulators: 1.61 MiB" "$K" summary --model fashion_cnn --batch-size 64 --accumulate 4
expect "summary --optimizer sgd: no optimizer state but the learning rate" "Total +421642 +1.61 MiB +1.61 MiB +4 B" "$K" summary --model fashion_cnn --batch-size 64 --optimizer sgd
expect_fail "summary: batch not divisible" "not divisible by --accumulate 4" "$K" summary --model fashion_cnn --batch-size 30 --accumulate 4

# --batch-size auto on the CPU: the largest multiple of 8 that fits --memory-limit
expect "--batch-size auto with a small --memory-limit" "Batch size auto: [1-9][0-9]*, the largest multiple of 8 whose planned training step fits in --memory-limit \(10.0 MiB\)" \
  "$K" train "${Q[@]}" --batch-size auto --memory-limit 10
expect "--batch-size auto with --accumulate" "Batch size auto: [1-9][0-9]*, the largest multiple of 8 and of --accumulate" "$K" train "${Q[@]}" --batch-size auto --memory-limit 10 --accumulate 2
expect_fail "--batch-size auto: nothing fits" "even a batch of 8 needs .* MiB" "$K" train "${Q[@]}" --batch-size auto --memory-limit 2

# numbers that go wrong
expect_fail "a diverging run stops naming epoch, step and the first layer that went non-finite" "the (loss became (NaN|Inf)|gradients became non-finite) at epoch 1, step [0-9]+.* and training stopped. The first non-finite value \(forward order, then the backward pass\) is in (the gradient of )?(layer [a-z_0-9]+ \([A-Za-z0-9]+\)|the loss).*update was skipped.*--clipnorm" \
  "$K" train "${Q[@]}" --lr 1e6
expect_fail "--debug-numerics names the first op and its layer" "a value became non-finite at epoch 1, step [0-9]+, first in layer [a-z_0-9]+ \([A-Za-z0-9]+\).*update was not applied" \
  "$K" train "${Q[@]}" --lr 1e6 --debug-numerics

echo "test_memfit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
