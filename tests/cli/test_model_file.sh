#!/usr/bin/env bash
# kiln --model-file: Keras model JSON files (tests/data/keras, written by real Keras) give the
# model of summary / train / eval / predict; parameter counts are Keras' own; refused files name
# the layer and the key. Training runs on a small class-separable IDX set made here (10 classes:
# a bright square whose place is the class).
# Usage: test_model_file.sh path/to/kiln path/to/tests/data/keras
set -u
K=${1:?usage: test_model_file.sh path/to/kiln path/to/tests/data/keras}
D=${2:?usage: test_model_file.sh path/to/kiln path/to/tests/data/keras}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"   # ok, bad, expect, expect_fail
# "1,234" as Kiln's summary prints a count
commas() { printf "%'d" "$1" 2>/dev/null | grep -q "," && printf "%'d" "$1" || sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

# summary: Keras' parameter counts, Keras 3 and tf.keras 2 files alike
for f in "$D"/keras3/*.json "$D"/tf_keras2/*.json; do
  params=$(awk '$1 == "params" { print $2 }' "${f%.json}.expected")
  trainable=$(awk '$1 == "trainable" { print $2 }' "${f%.json}.expected")
  expect "summary --model-file $f: $params parameters" "Total params: $(commas "$params") .*Trainable params: $(commas "$trainable") " \
    bash -c '"$0" summary --model-file "$1" | tr "\n" " " | sed "s/ *$//"' "$K" "$f"
done
# refused files: the message names the layer and the key
expect_fail "channels_first is refused" "layer 'conv_cf' \(Conv2D\): 'data_format' is \"channels_first\"" "$K" summary --model-file "$D/errors/channels_first.json"
expect_fail "ReLU threshold is refused" "layer 'relu_t' \(ReLU\): 'threshold'" "$K" train --model-file "$D/errors/relu_threshold.json" --data synthetic
expect_fail "an unknown layer is refused" "layer 'gn': unknown type 'GroupNormalization'" "$K" summary --model-file "$D/errors/unknown_layer.json"
expect_fail "a missing file is named" "model file '$tmp/none.json'" "$K" summary --model-file "$tmp/none.json"
printf '{"class_name": "Sequential", "config": {"layers": [' > "$tmp/cut.json"
expect_fail "malformed JSON names the file and the byte" "model file '$tmp/cut.json': not valid JSON: .*byte" "$K" summary --model-file "$tmp/cut.json"
expect_fail "--model and --model-file" "not both" "$K" train --model mlp --model-file "$D/keras3/mlp.json"
expect_fail "synthetic images for a model of 8 features" "does not take images" "$K" train --model-file "$D/keras3/binary.json" --data synthetic
expect_fail "--json is a summary option" "--json is an option of kiln summary" "$K" train --json "$tmp/x.json"

# a built-in model out as Keras JSON and back in
expect "summary --json writes Keras JSON" "Keras model JSON: $tmp/cifar_cnn.json" "$K" summary --model cifar_cnn --json "$tmp/cifar_cnn.json"
n=$("$K" summary --model cifar_cnn | grep -o "Total params: [0-9,]*")
expect "its JSON gives the same model" "$n" "$K" summary --model-file "$tmp/cifar_cnn.json"

# a class-separable IDX data set: 28x28 grey, class k = a bright 8x8 square at cell k of a 4x3 grid
python3 - "$tmp/idx" <<'PY' || { bad "could not write the IDX data set"; exit 1; }
import os, random, struct, sys
d = sys.argv[1]; os.makedirs(d)
def write(prefix, n, seed):
    r = random.Random(seed)
    labels = [r.randrange(10) for _ in range(n)]
    img = bytearray()
    for k in labels:
        px = bytearray(r.randrange(0, 60) for _ in range(28 * 28))
        y0, x0 = 2 + (k // 4) * 9, 1 + (k % 4) * 7
        for y in range(y0, y0 + 8):
            for x in range(x0, x0 + 6):
                px[y * 28 + x] = r.randrange(200, 256)
        img += px
    open(os.path.join(d, prefix + "-images-idx3-ubyte"), "wb").write(struct.pack(">IIII", 0x803, n, 28, 28) + img)
    open(os.path.join(d, prefix + "-labels-idx1-ubyte"), "wb").write(struct.pack(">II", 0x801, n) + bytes(labels))
write("train", 1024, 1)
write("t10k", 256, 2)
PY
out=$("$K" train --model-file "$D/keras3/mlp.json" --data "mnist:$tmp/idx" --epochs 3 --batch-size 32 --save "$tmp/mlp.safetensors" --verbose 2 2>&1); rc=$?
acc=$(sed -n 's/^Test accuracy: \([0-9.]*\)%.*/\1/p' <<<"$out")
if [ $rc -eq 0 ] && [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 80) }'; then ok; else bad "train --model-file mlp.json should learn the squares (rc $rc): $out"; fi
expect "train names the file's model" "^Training mlp on mnist:" echo "$out"
expect "eval --model-file with the checkpoint's weights" "test accuracy $acc%" "$K" eval --model-file "$D/keras3/mlp.json" --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx"
expect "eval of the checkpoint alone (its architecture)" "test accuracy $acc%" "$K" eval --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx"
expect "the tf.keras 2 file of the same model takes the weights" "test accuracy $acc%" "$K" eval --model-file "$D/tf_keras2/mlp.json" --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx"
expect "predict --model-file" "of 5 correct" "$K" predict --model-file "$D/keras3/mlp.json" --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx" --count 5
expect "summary --model-file --load" "Checkpoint $tmp/mlp.safetensors: model mlp, epoch 3" "$K" summary --model-file "$D/keras3/mlp.json" --load "$tmp/mlp.safetensors"
expect "train --model-file --load resumes" "Resuming from $tmp/mlp.safetensors at epoch 3" "$K" train --model-file "$D/keras3/mlp.json" --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx" --epochs 4 --verbose 0
expect_fail "another architecture does not take the weights" "shape|missing|dense" "$K" eval --model-file "$D/keras3/cnn.json" --load "$tmp/mlp.safetensors" --data "mnist:$tmp/idx"
# a Keras CNN ending in softmax (Conv2D, BatchNormalization, MaxPooling2D, Dropout, Activation):
# trained with from_logits off, it learns too
out=$("$K" train --model-file "$D/keras3/cnn.json" --data "mnist:$tmp/idx" --limit 512 --epochs 2 --batch-size 32 --verbose 0 2>&1); rc=$?
acc=$(sed -n 's/^Test accuracy: \([0-9.]*\)%.*/\1/p' <<<"$out")
if [ $rc -eq 0 ] && [ -n "$acc" ] && awk -v a="$acc" 'BEGIN { exit !(a >= 50) }'; then ok; else bad "train --model-file cnn.json (softmax output) should learn (rc $rc): $out"; fi

echo "test_model_file: $pass passed, $fail failed"
[ $fail -eq 0 ]
