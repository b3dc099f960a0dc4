#!/usr/bin/env bash
# GPTs exported to ONNX (test_gpt_onnx writes NAME.onnx, NAME.ids, NAME.logits: two small GPTs and
# the gpt_char preset) run in onnxruntime from int64 token ids: the logits must be Kiln's within
# 1e-4. A venv with onnx and onnxruntime from PyPI (scripts/pyenv.sh; exit 77 when unreachable).
#   test_gpt_onnx_ort.sh SOURCE_DIR TEST_GPT_ONNX
set -u
src=${1:?usage: test_gpt_onnx_ort.sh SOURCE_DIR TEST_GPT_ONNX}; bin=${2:?}
py=$(bash "$src/scripts/pyenv.sh" onnx onnx onnxruntime numpy) || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" "$work" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
"$py" - "$work" <<'PY'
import sys
import numpy as np
import onnx
import onnxruntime as ort
work, ok = sys.argv[1], True
for name in ("gpt_tanh", "gpt_erf", "gpt_char"):
    path = "%s/%s.onnx" % (work, name)
    onnx.checker.check_model(onnx.load(path))
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    inp = s.get_inputs()[0]
    T = inp.shape[1]
    ids = np.fromfile("%s/%s.ids" % (work, name), "<i8").reshape(-1, T)
    want = np.fromfile("%s/%s.logits" % (work, name), "<f4").reshape(ids.shape[0], T, -1)
    got = s.run(None, {inp.name: ids})[0]
    err = float(np.abs(got - want).max())
    good = inp.type == "tensor(int64)" and got.shape == want.shape and err < 1e-4
    ok &= good
    print("%-9s onnxruntime vs Kiln: input %s %s, logits %s, max |difference| %.3g  %s"
          % (name, inp.type, inp.shape, got.shape, err, "ok" if good else "FAIL"))
sys.exit(0 if ok else 1)
PY
