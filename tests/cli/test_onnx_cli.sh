#!/usr/bin/env bash
# kiln export and --model-file FILE.onnx: export a trained model, train / evaluate / predict /
# summarize the ONNX file, fine-tune it and evaluate the checkpoint, errors that name the problem.
# Usage: test_onnx_cli.sh path/to/kiln
set -u
K=${1:?usage: test_onnx_cli.sh path/to/kiln}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"   # ok, bad, expect, expect_fail
T="--data synthetic --limit 256 --epochs 1 --batch-size 32 --verbose 0 --prefetch 0"

expect "kiln export --help" "usage: kiln export" "$K" export --help
expect "kiln --help lists export" "export +write a saved model as an ONNX file" "$K" --help
expect_fail "export needs --load" "--load PATH is required" "$K" export -o "$tmp/m.onnx"
expect_fail "export needs --output" "--output FILE.onnx is required" "$K" export --load "$tmp/none.safetensors"
expect_fail "export: a missing checkpoint is named" "$tmp/none.safetensors" "$K" export --load "$tmp/none.safetensors" -o "$tmp/m.onnx"
expect_fail "export: unknown argument" "unexpected argument" "$K" export --frobnicate

expect "train mlp" "Saved: $tmp/mlp.safetensors" "$K" train --model mlp $T --save "$tmp/mlp.safetensors"
expect "export it" "Exported mlp \(epoch 1\) to $tmp/mlp.onnx: input \[28, 28, 1\] NHWC, output \[10\]" \
  "$K" export --load "$tmp/mlp.safetensors" -o "$tmp/mlp.onnx"
[ -s "$tmp/mlp.onnx" ] && ok || bad "no $tmp/mlp.onnx"
expect "export --model NAME" "Exported mlp" "$K" export --load "$tmp/mlp.safetensors" --model mlp --probabilities -o "$tmp/mlp_p.onnx"
expect_fail "export --model of another shape" "mlp|cifar_cnn|kernel" "$K" export --load "$tmp/mlp.safetensors" --model cifar_cnn -o "$tmp/x.onnx"

# the same accuracy from the checkpoint and from its ONNX export
acc_ckpt=$("$K" eval --load "$tmp/mlp.safetensors" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%")
acc_onnx=$("$K" eval --model-file "$tmp/mlp.onnx" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%")
[ -n "$acc_ckpt" ] && [ "$acc_ckpt" = "$acc_onnx" ] && ok || bad "eval of the checkpoint ($acc_ckpt) and of its ONNX export ($acc_onnx) differ"
expect "summary --model-file" "onnx_graph \(ImportedGraph\)" "$K" summary --model-file "$tmp/mlp.onnx"
# the imported graph's ops and FLOPs: Kiln's own count of the model it was exported from
expect "summary --model-file lists the graph's ops" "Gemm x2: 203402 FLOPs" "$K" summary --model-file "$tmp/mlp.onnx"
fl_kiln=$("$K" summary --model mlp 2>&1 | grep "FLOPs per example")
fl_onnx=$("$K" summary --model-file "$tmp/mlp.onnx" 2>&1 | grep "FLOPs per example")
[ -n "$fl_kiln" ] && [ "$fl_kiln" = "$fl_onnx" ] && ok || bad "FLOPs of the imported model '$fl_onnx' vs Kiln's '$fl_kiln'"
expect "predict --model-file" "of 3 correct" "$K" predict --model-file "$tmp/mlp.onnx" --data synthetic --count 3
expect "train --model-file (fine-tuning)" "Saved: $tmp/ft.safetensors" "$K" train --model-file "$tmp/mlp.onnx" $T --save "$tmp/ft.safetensors"
expect "eval --model-file with its checkpoint" "on synthetic: test accuracy" "$K" eval --model-file "$tmp/mlp.onnx" --load "$tmp/ft.safetensors" --data synthetic
expect_fail "the checkpoint alone names what rebuilds it" "kiln_model_from_onnx|--model-file" "$K" eval --load "$tmp/ft.safetensors" --data synthetic
# the fine-tuned imported model exported back: the source graph with the checkpoint's weights
expect_fail "export: the checkpoint alone says it holds an imported model's weights" "imported from an ONNX file.*--model-file" \
  "$K" export --load "$tmp/ft.safetensors" -o "$tmp/ft.onnx"
expect "export --model-file F.onnx --load CKPT" "the graph of $tmp/mlp.onnx with the weights of $tmp/ft.safetensors" \
  "$K" export --model-file "$tmp/mlp.onnx" --load "$tmp/ft.safetensors" -o "$tmp/ft.onnx"
ev_ft=$("$K" eval --model-file "$tmp/mlp.onnx" --load "$tmp/ft.safetensors" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%, loss [0-9.]+")
ev_ex=$("$K" eval --model-file "$tmp/ft.onnx" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%, loss [0-9.]+")
ev_or=$("$K" eval --model-file "$tmp/mlp.onnx" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%, loss [0-9.]+")
[ -n "$ev_ft" ] && [ "$ev_ft" = "$ev_ex" ] && [ "$ev_ex" != "$ev_or" ] && ok ||
  bad "the exported fine-tuned model evaluates to '$ev_ex', the checkpoint to '$ev_ft', the original to '$ev_or'"
expect_fail "export --model-file F.onnx without --load" "--load PATH is required" "$K" export --model-file "$tmp/mlp.onnx" -o "$tmp/x.onnx"
expect_fail "--model and --model-file" "give one" "$K" eval --model mlp --model-file "$tmp/mlp.onnx"
expect_fail "a missing ONNX file is named" "$tmp/none.onnx" "$K" eval --model-file "$tmp/none.onnx" --data synthetic
expect_fail "not an ONNX file" "not a model file kiln reads|not a JSON text" "$K" summary --model-file "$tmp/mlp.safetensors"
echo "garbage" >"$tmp/bad.onnx"
expect_fail "a corrupt ONNX file" "not a valid ONNX file" "$K" summary --model-file "$tmp/bad.onnx"
mkfifo "$tmp/fifo.onnx"
expect_fail "a FIFO as the ONNX model is refused at once" "ONNX model '$tmp/fifo.onnx': not a regular file \(a FIFO\)" \
  timeout 10 "$K" summary --model-file "$tmp/fifo.onnx"
expect_fail "an ONNX model on data of another shape" "takes \[28, 28, 1\] examples but the data has \[32, 32, 3\]" \
  "$K" eval --model-file "$tmp/mlp.onnx" --data synthetic:32x32x3:100

echo "test_onnx_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
