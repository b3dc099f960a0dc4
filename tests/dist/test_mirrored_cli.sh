#!/bin/bash
# kiln train --gpus / --devices on two simulated GPUs (ctest test_mirrored_cli; args: the kiln
# binary, libkiln_cuda_sim.so): kiln devices names the replicas, a mirrored run trains and says
# how the batch is split, the placement log lists the replicas and each replica's ops once, bad
# lists are refused.
K=$1
export KILN_CUDA_MODULE=$2 CUSIM_DEVICES=2
pass=0 fail=0
source "$(dirname "$0")/../cli/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
awk 'BEGIN{srand(5); print "a,b,c,d,label"; for(i=0;i<320;i++){a=rand()*2-1;b=rand()*2-1;c=rand()*2-1;d=rand()*2-1;
     l=(a+b>0)?1:0; printf "%.4f,%.4f,%.4f,%.4f,%d\n",a,b,c,d,l}}' > "$tmp/t.csv"
T=(train --model mlp --data csv:"$tmp/t.csv" --batch-size 64 --verbose 2 --threads 1)
expect "kiln devices names the replicas" "Replicas: kiln train --gpus 2" "$K" devices
out=$("$K" "${T[@]}" --epochs 2 --gpus 2 --history "$tmp/h.csv" --log-device-placement 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/h.csv")" -eq 3 ] && ok || bad "train --gpus 2 (rc $rc): $(tail -4 <<<"$out")"
grep -q "Mirrored: 2 replicas (0,1), global batch 64 = 32 per replica" <<<"$out" && ok || bad "the mirrored line: $(head -3 <<<"$out")"
grep -q "replica 1 of 2: /device:GPU:1" <<<"$out" && ok || bad "the placement log lists the replicas"
# each replica's ops once: replica 1's as replica_1/... on GPU 1, as many as replica 0's
r0=$(grep -cE "^[A-Za-z_][^ ]*: \([A-Za-z0-9]+\): /device:GPU:0$" <<<"$out")
r1=$(grep -cE "^replica_1/[^ ]*: \([A-Za-z0-9]+\): /device:GPU:1$" <<<"$out")
dup=$(grep -E "^replica_1/" <<<"$out" | grep -v "_copy_to_" | sort | uniq -d | wc -l)
[ "$r1" -gt 5 ] && [ "$dup" -eq 0 ] && [ "$(grep -c "^replica_1/.*GPU:0$" <<<"$out")" -eq 0 ] && ok ||
    bad "replica 1's placement: $r1 ops on GPU 1 (replica 0: $r0 on GPU 0), $dup logged twice"
expect "--devices gpu:0,gpu:1" "Mirrored: 2 replicas \(gpu:0,gpu:1\)" "$K" "${T[@]}" --epochs 1 --devices gpu:0,gpu:1
expect "--gpus all" "Mirrored: 2 replicas \(all\)" "$K" "${T[@]}" --epochs 1 --gpus all
expect_fail "--gpus 3 on two GPUs" "no GPU 2 \(2 visible\)" "$K" "${T[@]}" --epochs 1 --gpus 3
expect_fail "--gpus x" "--gpus x: give a number of GPUs" "$K" "${T[@]}" --epochs 1 --gpus x
expect_fail "--gpus with --devices" "give --gpus or --devices, not both" "$K" "${T[@]}" --epochs 1 --gpus 2 --devices 0,1
expect_fail "--devices not starting at gpu:0" "first device must be gpu:0" "$K" "${T[@]}" --epochs 1 --devices gpu:1,gpu:0
expect "--sync-batchnorm with mirrored GPUs" "Mirrored: 2 replicas" "$K" "${T[@]}" --epochs 1 --gpus 2 --sync-batchnorm
expect_fail "a batch two GPUs cannot share" "multiple of 2" "$K" "${T[@]}" --epochs 1 --gpus 2 --batch-size 63
echo "test_mirrored_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
