#!/bin/bash
# kiln train / summary / bench --precision: the names, the policy in effect, a CPU without bf16.
K=$1
pass=0 fail=0
. "$(dirname "$0")/lib.sh"
expect "train --help names --precision" "--precision P.*mixed_bfloat16" "$K" train --help
expect "summary --precision" "Precision: mixed_bfloat16" "$K" summary --model mlp --precision bf16
expect_fail "an unknown precision names the accepted ones" "kiln train: --precision: precision 'half' unknown: use float32, mixed_bfloat16 \(bf16\) or mixed_float16 \(fp16\)" "$K" train --precision half
expect_fail "eval takes no --precision" "--precision is an option of kiln train, kiln summary" "$K" eval --precision bf16
if grep -qw avx512_bf16 /proc/cpuinfo || grep -qw amx_bf16 /proc/cpuinfo; then want=mixed_bfloat16; else want=float32; fi
expect "train --precision bf16 runs ($want on this CPU)" "Precision: $want" \
    "$K" train --data synthetic --model mlp --precision bf16 --epochs 1 --limit 256 --device cpu
expect "a CPU without bf16 says so and trains in f32" "no bf16 instructions.*runs as float32" \
    env KILN_CPU_BF16=0 "$K" train --data synthetic --model mlp --precision bf16 --epochs 1 --limit 256 --device cpu
expect "bench --precision bf16" "precision $want" "$K" bench --model mlp --precision bf16 --device cpu --steps 8 --batch-size 32
expect_fail "bench --precision names the accepted ones" "precision 'x' unknown" "$K" bench --precision x
expect "summary plans the step in the policy" "Peak of the planned training step" "$K" summary --model mlp --batch-size 32 --precision bf16
expect "mixed_float16 with --accumulate trains, the loss scale shown" "skipped steps: 0 - loss scale: 32768" \
    "$K" train --data synthetic --model mlp --precision fp16 --accumulate 2 --epochs 1 --limit 64 --device cpu
echo "test_precision_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
