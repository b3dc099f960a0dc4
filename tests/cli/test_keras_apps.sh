#!/usr/bin/env bash
# The judge of issue 29: keras.applications of Keras 3 (tensorflow-cpu from PyPI, through
# scripts/pyenv.sh; exit 77 = skipped when PyPI cannot be reached), each built with
# weights=None, classes=10 and a small input, written with model.to_json(); Kiln loads each with
# Keras's exact count_params() and trains one step (keras_apps_check), and given Keras's weights
# predicts what Keras predicts (compare_predictions.py). ConvNeXtTiny brings a Sequential nested
# in the Functional model (inlined), LayerScale and Dense over the last axis of an image.
# Usage: test_keras_apps.sh path/to/keras_apps_check SOURCE_DIR
set -u -o pipefail
C=${1:?usage: test_keras_apps.sh path/to/keras_apps_check SOURCE_DIR}
S=${2:?usage: test_keras_apps.sh path/to/keras_apps_check SOURCE_DIR}
PY=$(bash "$S/scripts/pyenv.sh" tensorflow tensorflow-cpu) || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES= "$PY" - "$tmp" <<'PY' >"$tmp/keras.log" 2>&1 || { grep -v "^WARNING\|^I0000\|oneDNN custom operations" "$tmp/keras.log"; echo "FAIL: Keras could not build the models"; exit 1; }
import sys
import keras
A = keras.applications
# (name, builder, the smallest square input it takes, at least 32)
apps = [("VGG16", A.VGG16, 32), ("ResNet50", A.ResNet50, 32), ("ResNet50V2", A.ResNet50V2, 32),
        ("MobileNet", A.MobileNet, 32), ("MobileNetV2", A.MobileNetV2, 32), ("MobileNetV3Small", A.MobileNetV3Small, 32),
        ("DenseNet121", A.DenseNet121, 32), ("InceptionV3", A.InceptionV3, 75), ("Xception", A.Xception, 71),
        ("EfficientNetB0", A.EfficientNetB0, 32), ("NASNetMobile", A.NASNetMobile, 32), ("ConvNeXtTiny", A.ConvNeXtTiny, 32)]
out = sys.argv[1]
for name, make, side in apps:
    m = make(weights=None, classes=10, input_shape=(side, side, 3))
    open(f"{out}/{name}.json", "w").write(m.to_json())
    open(f"{out}/{name}.count", "w").write(str(m.count_params()))
PY
args=()
for n in VGG16 ResNet50 ResNet50V2 MobileNet MobileNetV2 MobileNetV3Small DenseNet121 InceptionV3 Xception EfficientNetB0 NASNetMobile ConvNeXtTiny; do
  [ -f "$tmp/$n.json" ] || { echo "FAIL: Keras did not write $n"; exit 1; }
  args+=("$tmp/$n.json" "$(cat "$tmp/$n.count")")
done
fail=0
OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} "$C" "${args[@]}" || fail=1
# the same predictions as Keras with Keras's weights (and issue 29's layers in one small model)
jsons=("$S/tests/data/keras/keras3/apps_layers.json" "$S/tests/data/keras/keras3/prelu_nested.json")   # prelu_nested: PReLU (shared_axes) in a nested Sequential
for ((i = 0; i < ${#args[@]}; i += 2)); do jsons+=("${args[i]}"); done
TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES= "$PY" "$S/tests/keras/compare_predictions.py" "$C" "$tmp" "${jsons[@]}" 2>&1 |
  grep -v "^WARNING\|^I0000\|oneDNN custom operations\|no GPU found"
[ "${PIPESTATUS[0]}" = 0 ] || fail=1
exit $fail
