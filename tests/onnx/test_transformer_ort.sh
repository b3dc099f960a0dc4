#!/usr/bin/env bash
# The Keras transformer of tests/data/keras/keras3/transformer.* (Embedding, LayerNormalization,
# causal MultiHeadAttention) as Kiln exports it to ONNX, run in onnxruntime: its predictions must
# be Keras's (transformer.values) within 1e-5. A venv with onnxruntime from PyPI
# (scripts/pyenv.sh; exit 77 = skipped when PyPI is unreachable).
#   test_transformer_ort.sh SOURCE_DIR TEST_TRANSFORMER
set -u
src=${1:?usage: test_transformer_ort.sh SOURCE_DIR TEST_TRANSFORMER}; bin=${2:?}
py=$(bash "$src/scripts/pyenv.sh" onnx onnx onnxruntime numpy) || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
KILN_TRANSFORMER_ONNX="$work/t.onnx" "$bin" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
[ -f "$work/t.onnx" ] || { echo "test_transformer wrote no ONNX file"; cat "$work/log"; exit 1; }
"$py" - "$work/t.onnx" "$src/tests/data/keras/keras3/transformer.values" <<'PY'
import sys
import numpy as np
import onnx
import onnxruntime as ort
path, values = sys.argv[1], sys.argv[2]
onnx.checker.check_model(onnx.load(path))
arrs = {}
for line in open(values):
    f = line.split()
    if f[0] in ("x", "y"):
        arrs[f[0]] = np.array([float(t) for t in f[2:]], dtype=np.float32)
s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
y = s.run(None, {s.get_inputs()[0].name: arrs["x"].reshape(3, 10)})[0]
err = float(np.abs(y.ravel() - arrs["y"]).max())
print("onnxruntime vs Keras on the exported transformer: largest |difference| %.3g" % err)
sys.exit(0 if err < 1e-5 else 1)
PY
