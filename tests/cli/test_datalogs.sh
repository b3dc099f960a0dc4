#!/usr/bin/env bash
# CLI checks for data as Keras users keep it and the logs (issue 12): --data csv:/npz:, --label-column,
# --test-csv, --loss, --metrics, --tensorboard, and errors that name the file, line and column.
# Usage: test_datalogs.sh path/to/kiln path/to/source-root
set -u
K=${1:?usage: test_datalogs.sh path/to/kiln path/to/source-root}
SRC=${2:?usage: test_datalogs.sh path/to/kiln path/to/source-root}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"   # ok, bad, expect, expect_fail
PY=$(command -v python3 || true)
if [ -z "$PY" ]; then echo "test_datalogs: python3 not found (it writes the CSV files): skipped"; exit 77; fi
Q=(--threads 1 --verbose 2)

expect "train --help lists the data formats and options" "csv:FILE.csv.*" "$K" train --help
for w in "npz:FILE.npz" "--label-column" "--test-csv" "--loss NAME" "binary_crossentropy" "--metrics LIST" "--tensorboard DIR" "--tensorboard-every"; do
  expect "train --help has $w" "$w" "$K" train --help
done
expect "eval --help has --loss" "--loss NAME" "$K" eval --help

# the seed's binary classifier, from the CSV the repo generates (README's commands)
"$PY" "$SRC/tests/data/make_binary_csv.py" -o "$tmp/train.csv" --test "$tmp/test.csv" || bad "make_binary_csv.py"
[ "$(head -1 "$tmp/train.csv")" = "f1,f2,f3,f4,label" ] && [ "$(wc -l < "$tmp/train.csv")" -eq 1001 ] && [ "$(wc -l < "$tmp/test.csv")" -eq 251 ] && ok || bad "make_binary_csv.py rows"
out=$("$K" train --model mlp --data csv:"$tmp/train.csv" --loss binary_crossentropy --epochs 30 --batch-size 32 --lr 0.003 "${Q[@]}" \
      --save "$tmp/bin.safetensors" --history "$tmp/h.csv" --tensorboard "$tmp/tb" --tensorboard-every 10 2>&1)
rc=$?
acc=$(grep -oE "Validation accuracy: [0-9.]+" <<<"$out" | grep -oE "[0-9.]+$")
if [ $rc -eq 0 ] && [ -n "$acc" ] && awk -v a="$acc" 'BEGIN{exit !(a >= 80)}'; then ok; else bad "binary classifier on csv (rc $rc, accuracy '$acc'): $(tail -5 <<<"$out")"; fi
grep -q "900 training / 100 held-out examples" <<<"$out" && ok || bad "a CSV without --test-csv holds 10% out: $(head -2 <<<"$out")"
first=$(sed -n 2p "$tmp/h.csv" | cut -d, -f2); last=$(tail -1 "$tmp/h.csv" | cut -d, -f2)
awk -v f="$first" -v l="$last" 'BEGIN{exit !(l < 0.8 * f)}' && ok || bad "binary_crossentropy falls: $first -> $last"
ls "$tmp"/tb/train/events.out.tfevents.* >/dev/null 2>&1 && ls "$tmp"/tb/validation/events.out.tfevents.* >/dev/null 2>&1 && ok || bad "--tensorboard writes train/ and validation/: $(ls -R "$tmp/tb" 2>&1)"
grep -q "TensorBoard logs: $tmp/tb (view: tensorboard --logdir $tmp/tb)" <<<"$out" && ok || bad "train says where the logs are"
expect "--test-csv gives a test split" "1000 training / 250 test examples.*|Test accuracy" "$K" train --model mlp --data csv:"$tmp/train.csv" --test-csv "$tmp/test.csv" --loss binary_crossentropy --epochs 1 "${Q[@]}"
expect "eval of the binary classifier on the test CSV" "test accuracy [0-9.]+%, loss [0-9.]+, 250 examples" "$K" eval --load "$tmp/bin.safetensors" --data csv:"$tmp/train.csv" --test-csv "$tmp/test.csv" --threads 1
expect "eval without --loss uses binary_crossentropy for a one-unit model" "held-out .* accuracy" "$K" eval --load "$tmp/bin.safetensors" --data csv:"$tmp/train.csv" --threads 1
expect "eval --metrics none prints the loss alone" "held-out \(0.1 of the training data\) loss [0-9.]+, 100 examples" "$K" eval --load "$tmp/bin.safetensors" --data csv:"$tmp/train.csv" --metrics none --threads 1
out=$("$K" predict --load "$tmp/bin.safetensors" --data csv:"$tmp/train.csv" --test-csv "$tmp/test.csv" --count 20 --threads 1 2>&1)
right=$(grep -oE "^[0-9]+ of 20 correct" <<<"$out" | cut -d' ' -f1)
# one unit: class 1 when p > 0.5, confidence max(p, 1 - p) (a softmax over one unit said 100% for class 0 each time)
[ -n "$right" ] && [ "$right" -ge 14 ] && grep -qE "^ +[0-9]+  1 " <<<"$out" && grep -qE " [5-9][0-9]\.[0-9]%" <<<"$out" && ok || bad "predict on a binary classifier: $out"
# issue 28: a CSV file's examples are rows, not images
grep -qE "^ +row  predicted" <<<"$out" && ! grep -q "image" <<<"$out" && ok || bad "predict on CSV rows: header 'row': $out"
# issue 28: the checkpoint records its data (relative paths made absolute); eval / predict without
# --data use it and say so, from another directory too; --data still names other data
mkdir -p "$tmp/rel" && cp "$tmp/train.csv" "$tmp/test.csv" "$tmp/rel/"
(cd "$tmp/rel" && "$K" train --model mlp --data csv:train.csv --test-csv test.csv --loss binary_crossentropy --epochs 1 "${Q[@]}" --save rec.safetensors >/dev/null 2>&1) || bad "train from a relative CSV path"
rtmp=$(cd "$tmp/rel" && pwd -P)
out=$(cd / && "$K" eval --load "$tmp/rel/rec.safetensors" --threads 1 2>&1)
grep -qF "Data: csv:$rtmp/train.csv --test-csv $rtmp/test.csv (what $tmp/rel/rec.safetensors was trained on" <<<"$out" &&
  grep -qE "test accuracy [0-9.]+%, loss [0-9.]+, 250 examples" <<<"$out" && ok || bad "eval without --data uses the checkpoint's data: $out"
out=$(cd / && "$K" predict --load "$tmp/rel/rec.safetensors" --count 5 --threads 1 2>&1)
grep -q "Data: csv:$rtmp/train.csv" <<<"$out" && grep -qE "^[0-9]+ of 5 correct" <<<"$out" && ok || bad "predict without --data uses the checkpoint's data: $out"
out=$("$K" eval --load "$tmp/rel/rec.safetensors" --data csv:"$tmp/train.csv" --threads 1 2>&1)
! grep -q "^Data:" <<<"$out" && grep -q "held-out (0.1 of the training data)" <<<"$out" && ok || bad "--data overrides the checkpoint's data: $out"
expect "eval --help says the checkpoint's data is the default" "the data options the checkpoint was trained on" "$K" eval --help

# regression: f32 labels train with mse (the default for them), one output unit
"$PY" - "$tmp/reg.csv" <<'PYEOF'
import random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    f.write("a,b,target\n")
    for i in range(800):
        a, b = r.uniform(-1, 1), r.uniform(-1, 1)
        f.write(f"{a:.4f},{b:.4f},{2 * a - b + 0.5 + r.gauss(0, 0.05):.4f}\n")
PYEOF
out=$("$K" train --model mlp --data csv:"$tmp/reg.csv" --label-column target --epochs 10 --lr 0.01 "${Q[@]}" --save "$tmp/reg.safetensors" 2>&1)
mse=$(grep -oE "Validation loss \(mse\): [0-9.e-]+" <<<"$out" | grep -oE "[0-9.e-]+$")
if [ -n "$mse" ] && awk -v m="$mse" 'BEGIN{exit !(m < 0.05)}'; then ok; else bad "mse regression on csv (mse '$mse'): $(tail -4 <<<"$out")"; fi
expect "predict prints values for a regression" "mean squared error of these 3" "$K" predict --load "$tmp/reg.safetensors" --data csv:"$tmp/reg.csv" --count 3 --threads 1
expect_fail "value labels with a class-id loss" "labels are values, not class ids" "$K" train --model mlp --data csv:"$tmp/reg.csv" --loss sparse_categorical_crossentropy --epochs 1 "${Q[@]}"

# npz: keras.datasets-style arrays (written by numpy when Debian's python3-numpy is there)
NPY=""
for p in "$PY" /usr/bin/python3; do "$p" -c "import numpy" 2>/dev/null && { NPY=$p; break; }; done
if [ -n "$NPY" ]; then
  "$NPY" - "$tmp" <<'PYEOF'
import sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(0)
def split(n):
    y = r.integers(0, 3, n)
    x = (r.random((n, 6, 6)) * 60).astype(np.uint8)
    for i, c in enumerate(y):
        x[i, 2 * c:2 * c + 2, :] += 180        # class c: bright rows 2c, 2c+1
    return x, y.astype(np.int64)
xtr, ytr = split(600)
xte, yte = split(120)
np.savez_compressed(f"{d}/data.npz", x_train=xtr, y_train=ytr, x_test=xte, y_test=yte)
np.savez(f"{d}/train_only.npz", x_train=xtr, y_train=ytr)
np.savez(f"{d}/no_labels.npz", x_train=xtr)
np.savez(f"{d}/fortran.npz", x_train=np.asfortranarray(xtr.astype(np.float32).reshape(600, 36)), y_train=ytr)
PYEOF
  out=$("$K" train --model mlp --data npz:"$tmp/data.npz" --epochs 5 "${Q[@]}" 2>&1)
  acc=$(grep -oE "Test accuracy: [0-9.]+" <<<"$out" | grep -oE "[0-9.]+$")
  if [ -n "$acc" ] && awk -v a="$acc" 'BEGIN{exit !(a >= 90)}' && grep -q "600 training / 120 test examples" <<<"$out"; then ok; else bad "mlp on npz (accuracy '$acc'): $(tail -4 <<<"$out")"; fi
  expect "npz without x_test holds 10% out" "540 training / 60 held-out examples" "$K" train --model mlp --data npz:"$tmp/train_only.npz" --epochs 1 "${Q[@]}"
  expect_fail "npz without y_train names the file and the array" "no_labels.npz: no array 'y_train' \(the file holds: x_train\)" "$K" train --model mlp --data npz:"$tmp/no_labels.npz" --epochs 1 "${Q[@]}"
  expect_fail "npz in Fortran order" "fortran.npz: array 'x_train': the array is in Fortran order" "$K" train --model mlp --data npz:"$tmp/fortran.npz" --epochs 1 "${Q[@]}"
  expect_fail "the wrong model for the npz's shape" "fashion_cnn takes \[28, 28, 1\] examples but --data npz:.* has \[6, 6, 1\]" "$K" train --model fashion_cnn --data npz:"$tmp/data.npz" --epochs 1 "${Q[@]}"
  # Fashion-MNIST as Keras keeps it (np.savez_compressed of the Debian IDX files) trains exactly as the IDX files do
  FM=/usr/share/datasets/fashion-mnist
  if [ -e "$FM/train-images-idx3-ubyte.gz" ] || [ -e "$FM/train-images-idx3-ubyte" ]; then
    "$NPY" "$SRC/tests/data/idx_to_npz.py" "$FM" -o "$tmp/fashion.npz" >/dev/null || bad "idx_to_npz.py"
    a_npz=$("$K" train --model mlp --data npz:"$tmp/fashion.npz" --epochs 1 --limit 1024 "${Q[@]}" 2>&1 | grep "Test accuracy")
    a_idx=$("$K" train --model mlp --data mnist:"$FM" --epochs 1 --limit 1024 "${Q[@]}" 2>&1 | grep "Test accuracy")
    [ -n "$a_npz" ] && [ "$a_npz" = "$a_idx" ] && ok || bad "Fashion-MNIST from npz vs IDX: '$a_npz' vs '$a_idx'"
  fi
else
  echo "test_datalogs: python3-numpy not found: the npz cases are not run (test_tabular writes .npz bytes itself)"
fi
head -c 100 "$tmp/train.csv" > "$tmp/cut.npz"
expect_fail "a file that is not an npz" "cut.npz: not a valid .npz \(zip\) archive" "$K" train --model mlp --data npz:"$tmp/cut.npz" --epochs 1 "${Q[@]}"

# errors name the file, line and column, or the option
printf 'a,b,label\n1,2,0\n3,oops,1\n' > "$tmp/bad.csv"
expect_fail "a bad CSV cell names the file, line and column" "bad.csv: line 3, column 2 \(\"b\"\): 'oops' is not a number" "$K" train --model mlp --data csv:"$tmp/bad.csv" "${Q[@]}"
expect_fail "--label-column that is not in the header" "no column named 'target' in the header \(columns: f1, f2, f3, f4, label\)" "$K" train --model mlp --data csv:"$tmp/train.csv" --label-column target "${Q[@]}"
expect_fail "--label-column without CSV data" "--label-column goes with --data csv:FILE.csv" "$K" train --model mlp --data synthetic --label-column 3 "${Q[@]}"
expect_fail "--test-csv with --validation-split" "--test-csv or --validation-split, not both" "$K" train --model mlp --data csv:"$tmp/train.csv" --test-csv "$tmp/test.csv" --validation-split 0.2 "${Q[@]}"
expect_fail "a missing --test-csv file names it" "$tmp/none.csv" "$K" train --model mlp --data csv:"$tmp/train.csv" --test-csv "$tmp/none.csv" "${Q[@]}"
expect_fail "unknown --loss" "--loss: unknown loss 'binary_focal_crossentropy'" "$K" train --model mlp --data csv:"$tmp/train.csv" --loss binary_focal_crossentropy "${Q[@]}"
expect_fail "unknown metric" "unknown metric 'f1' in --metrics" "$K" train --model mlp --data csv:"$tmp/train.csv" --metrics accuracy,f1 "${Q[@]}"
expect_fail "--tensorboard-every without --tensorboard" "--tensorboard-every N needs --tensorboard DIR" "$K" train --model mlp --data csv:"$tmp/train.csv" --tensorboard-every 5 "${Q[@]}"
touch "$tmp/file"
expect_fail "--tensorboard under a file fails before training" "tensorboard: .*file is not a directory" "$K" train --model mlp --data csv:"$tmp/train.csv" --tensorboard "$tmp/file/logs" "${Q[@]}"
expect_fail "a model that cannot take CSV rows" "cifar_cnn takes \[32, 32, 3\] examples but --data csv:.* has \[4\] examples" "$K" train --model cifar_cnn --data csv:"$tmp/train.csv" "${Q[@]}"
expect_fail "binary_crossentropy on 10 classes" "binary_crossentropy takes labels 0 and 1" "$K" train --model mlp --data synthetic:4x4x1:256 --loss binary_crossentropy --epochs 1 "${Q[@]}"
expect_fail "--loss is a train/eval option" "--loss is an option of kiln train, kiln eval" "$K" predict --load "$tmp/bin.safetensors" --loss mse

echo "test_datalogs: $pass passed, $fail failed"
[ $fail -eq 0 ]
