#!/bin/bash
# Every reader of a user-named file refuses a FIFO at once ("not a regular file") instead of
# waiting forever for a writer (issue 24.6): each command runs under `timeout 10`, so a hang is a
# failure (exit 124), not a stuck test. Also mnist:DIR / cifar10:DIR / images:DIR holding FIFOs.
# Usage: test_fifo_inputs.sh path/to/kiln
K=${1:?usage: test_fifo_inputs.sh path/to/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$(dirname "$0")/lib.sh"
T="timeout 10"
fifo() { mkfifo "$1" || { echo "test_fifo_inputs: skipped: mkfifo failed"; exit 77; }; }

fifo "$tmp/f.csv"; fifo "$tmp/f.npz"; fifo "$tmp/f.json"; fifo "$tmp/f.png"; fifo "$tmp/f.safetensors"
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n1,2,0\n3,4,1\n' >"$tmp/ok.csv"
"$K" train --model mlp --data synthetic:28x28x1:64 --epochs 1 --batch-size 16 --threads 1 --verbose 0 --prefetch 0 \
     --save "$tmp/m.safetensors" >/dev/null 2>&1 || bad "a checkpoint to predict with"

R="not a regular file"
expect_fail "--data csv:FIFO" "$R" $T "$K" train --model mlp --data "csv:$tmp/f.csv" --epochs 1
expect_fail "--data npz:FIFO" "$R" $T "$K" train --model mlp --data "npz:$tmp/f.npz" --epochs 1
expect_fail "--test-csv FIFO" "$R" $T "$K" train --model mlp --data "csv:$tmp/ok.csv" --test-csv "$tmp/f.csv" --epochs 1
expect_fail "--model-file FIFO.json" "$R" $T "$K" summary --model-file "$tmp/f.json"
expect_fail "train --model-file FIFO.json" "$R" $T "$K" train --model-file "$tmp/f.json" --data "csv:$tmp/ok.csv" --epochs 1
expect_fail "--load FIFO" "$R" $T "$K" summary --load "$tmp/f.safetensors"
expect_fail "predict --image FIFO" "$R" $T "$K" predict --load "$tmp/m.safetensors" --image "$tmp/f.png"
expect_fail "plot FIFO" "$R" $T "$K" plot "$tmp/f.csv" -o "$tmp/p.png"
expect_fail "export --model-file FIFO.json" "$R|ONNX support" $T "$K" export --load "$tmp/m.safetensors" --model-file "$tmp/f.json" -o "$tmp/m.onnx"

# directories whose files are FIFOs: "not a regular file", not "not found" (24.15)
mkdir "$tmp/mnist" "$tmp/cifar" "$tmp/img" "$tmp/img/a" "$tmp/img/b"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do fifo "$tmp/mnist/$f"; done
for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do fifo "$tmp/cifar/$f.bin"; done
fifo "$tmp/img/a/x.png"; fifo "$tmp/img/b/y.png"
expect_fail "mnist:DIR of FIFOs" "$R" $T "$K" train --model mlp --data "mnist:$tmp/mnist" --epochs 1
expect_fail "cifar10:DIR of FIFOs" "$R" $T "$K" train --model mlp --data "cifar10:$tmp/cifar" --epochs 1
expect_fail "images:DIR of FIFOs" "$R" $T "$K" train --model mlp --data "images:$tmp/img" --epochs 1
# the gzip form of an IDX name that is a FIFO
rm "$tmp/mnist/train-images-idx3-ubyte"; fifo "$tmp/mnist/train-images-idx3-ubyte.gz"
expect_fail "mnist:DIR with a FIFO .gz" "$R" $T "$K" train --model mlp --data "mnist:$tmp/mnist" --epochs 1

echo "test_fifo_inputs: $pass passed, $fail failed"
[ $fail -eq 0 ]
