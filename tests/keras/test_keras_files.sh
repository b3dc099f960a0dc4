#!/usr/bin/env bash
# Keras model files with their weights, both ways, judged by Keras 3 (tensorflow-cpu from PyPI
# through scripts/pyenv.sh; exit 77 = skipped when PyPI cannot be reached):
#  - models of every layer type Kiln reads (tests/keras/make_models.py), trained a little, saved by
#    Keras as .keras, legacy .h5 and .weights.h5 (+ JSON): Kiln's predictions equal Keras's within
#    1e-5 from each;
#  - Kiln writes each back as .keras (kiln_model_save_keras) and trains built-in models, exported
#    with `kiln export -o F.keras`: keras.models.load_model predicts what Kiln predicts, within 1e-5;
#  - the CLI takes --model-file F.keras|F.h5 in train, eval, predict, summary and export.
# Usage: test_keras_files.sh path/to/kiln path/to/keras_probe SOURCE_DIR
set -u -o pipefail
K=${1:?usage: test_keras_files.sh path/to/kiln path/to/keras_probe SOURCE_DIR}
P=${2:?usage}
S=${3:?usage}
"$P" keras /nonexistent.keras /dev/null /dev/null 2>&1 | grep -q "built without HDF5" && { echo "skipped: kiln built without HDF5"; exit 77; }
PY=$(bash "$S/scripts/pyenv.sh" tensorflow tensorflow-cpu) || exit 77
export TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$S/tests/cli/lib.sh"   # ok, bad, expect, expect_fail
names=$("$PY" "$S/tests/keras/make_models.py" "$tmp" 2>"$tmp/make.err") || { echo "FAIL: make_models.py: $(tail -5 "$tmp/make.err")"; exit 1; }
checks=()     # triples: Keras's predictions (.npy or a .keras file), Kiln's (.f32), inputs
for n in $names; do
  x=$tmp/x_$n.f32
  for f in "$n.keras" "$n.h5"; do
    if "$P" keras "$tmp/$f" "$x" "$tmp/k_$f.f32" 2>"$tmp/err"; then checks+=("$tmp/y_$n.npy" "$tmp/k_$f.f32" "$x"); ok
    else bad "Kiln reads $f: $(cat "$tmp/err")"; fi
  done
  if "$P" weights "$tmp/$n.json" "$tmp/$n.weights.h5" "$x" "$tmp/k_$n.w.f32" 2>"$tmp/err"; then checks+=("$tmp/y_$n.npy" "$tmp/k_$n.w.f32" "$x"); ok
  else bad "Kiln loads $n.weights.h5 onto $n.json: $(cat "$tmp/err")"; fi
  if "$P" resave "$tmp/$n.keras" "$tmp/kiln_$n.keras" 2>"$tmp/err"; then checks+=("$tmp/kiln_$n.keras" "$tmp/k_$n.keras.f32" "$x"); ok
  else bad "Kiln writes $n back as .keras: $(cat "$tmp/err")"; fi
done
# Kiln-trained models, exported by the CLI: built-in ones, and the Keras file fine-tuned in Kiln
# (BatchNormalization's statistics moved by Kiln)
T="--data synthetic --limit 128 --epochs 1 --batch-size 32 --verbose 0 --prefetch 0"
"$PY" -c "import numpy as np; np.random.RandomState(3).randn(5, 28, 28, 1).astype(np.float32).tofile('$tmp/x28.f32')"
for z in lenet5 fashion_cnn cli_cnn; do
  src=(--model "$z"); [ "$z" = cli_cnn ] && src=(--model-file "$tmp/cli_cnn.keras")
  if "$K" train "${src[@]}" $T --save "$tmp/$z.safetensors" >"$tmp/err" 2>&1 && "$K" export --load "$tmp/$z.safetensors" -o "$tmp/kx_$z.keras" >>"$tmp/err" 2>&1 &&
      "$P" ckpt "$tmp/$z.safetensors" "$tmp/x28.f32" "$tmp/k_$z.f32" 2>>"$tmp/err"; then checks+=("$tmp/kx_$z.keras" "$tmp/k_$z.f32" "$tmp/x28.f32"); ok
  else bad "train + kiln export $z -o $z.keras: $(tail -5 "$tmp/err")"; fi
done
"$PY" - "${checks[@]}" <<'PY' 2>&1 | grep -v "^WARNING\|^I0000\|oneDNN custom operations" || fail=$((fail + 1))
import sys, numpy as np, keras
a, bad = sys.argv[1:], 0
for want, got, x in zip(a[0::3], a[1::3], a[2::3]):
    try:
        if want.endswith(".keras"):
            m = keras.models.load_model(want)
            xs = np.fromfile(x, dtype=np.float32).reshape((-1,) + tuple(m.input_shape[1:]))
            y = m.predict(xs, verbose=0)
        else:
            y = np.load(want)
        k = np.fromfile(got, dtype=np.float32).reshape(y.shape)
        d = float(np.abs(y - k).max())
        if not d <= 1e-5:
            print("FAIL: %s vs %s: max difference %g" % (want, got, d)); bad += 1
        else:
            print("ok %-60s max |Keras - Kiln| %.2g" % (want.split("/")[-1] + " / " + got.split("/")[-1], d))
    except Exception as e:
        print("FAIL: %s: %s" % (want, str(e)[:400])); bad += 1
sys.exit(1 if bad else 0)
PY
# the CLI with a Keras file (28x28x1 images, 10 classes)
C=$tmp/cli_cnn
expect "summary --model-file F.keras" "cli_cnn" "$K" summary --model-file "$C.keras"
acc_keras=$("$K" eval --model-file "$C.keras" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%")
acc_h5=$("$K" eval --model-file "$C.h5" --data synthetic 2>&1 | grep -oE "accuracy [0-9.]+%")
[ -n "$acc_keras" ] && [ "$acc_keras" = "$acc_h5" ] && ok || bad "eval --model-file F.keras ($acc_keras) and F.h5 ($acc_h5) differ"
expect "predict --model-file F.keras" "of 3 correct" "$K" predict --model-file "$C.keras" --data synthetic --count 3
expect "eval --model-file F.keras --load CKPT" "on synthetic: test accuracy" "$K" eval --model-file "$C.keras" --load "$tmp/cli_cnn.safetensors" --data synthetic
expect "export --model-file F.h5 -o F.keras" "Keras 3" "$K" export --model-file "$C.h5" -o "$tmp/from_h5.keras"
expect_fail "a .weights.h5 is not a model" "weights only" "$K" summary --model-file "$C.weights.h5"
expect_fail "export --probabilities is for ONNX" "for ONNX files" "$K" export --load "$tmp/cli_cnn.safetensors" -o "$tmp/p.keras" --probabilities
expect_fail "export -o needs .onnx or .keras" "name it FILE.onnx" "$K" export --load "$tmp/cli_cnn.safetensors" -o "$tmp/p.bin"
expect "export --help names .keras" "FILE.keras" "$K" export --help
echo "test_keras_files: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
