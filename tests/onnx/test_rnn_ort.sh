#!/usr/bin/env bash
# Kiln's recurrent layers (SimpleRNN, LSTM with go_backwards and hard_sigmoid, GRU with and without
# reset_after, Bidirectional concat / sum / mul / ave) exported to ONNX's RNN / LSTM / GRU ops by
# test_rnn, run in onnxruntime: its predictions must be Kiln's within 1e-5. A venv with
# onnxruntime from PyPI (scripts/pyenv.sh; exit 77 = skipped when PyPI is unreachable).
#   test_rnn_ort.sh SOURCE_DIR TEST_RNN
set -u
src=${1:?usage: test_rnn_ort.sh SOURCE_DIR TEST_RNN}; bin=${2:?}
py=$(bash "$src/scripts/pyenv.sh" onnx onnx onnxruntime numpy) || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
KILN_RNN_ONNX="$work" "$bin" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
[ -f "$work/rnn.onnx" ] || { echo "test_rnn wrote no ONNX file"; cat "$work/log"; exit 1; }
"$py" - "$work" <<'PY'
import sys
import numpy as np
import onnx
import onnxruntime as ort
d = sys.argv[1]
onnx.checker.check_model(onnx.load(d + "/rnn.onnx"))
s = ort.InferenceSession(d + "/rnn.onnx", providers=["CPUExecutionProvider"])
inp = s.get_inputs()[0]
x = np.fromfile(d + "/x.f32", dtype=np.float32).reshape((-1,) + tuple(inp.shape[1:]))
y = s.run(None, {inp.name: x})[0]
want = np.fromfile(d + "/y.f32", dtype=np.float32).reshape(y.shape)
err = float(np.abs(y - want).max())
print("onnxruntime vs Kiln on the exported recurrent model: largest |difference| %.3g" % err)
sys.exit(0 if err < 1e-5 and np.abs(want).max() > 0 else 1)
PY
