#!/usr/bin/env bash
# A channels-first (PyTorch-style, input [N, 3, H, W]) ONNX image classifier in the CLI:
# kiln predict --image feeds it Kiln's NHWC images through a transpose in front, and gives the
# same top class and confidence as the model run on the same pixels in NCHW order (numpy).
# The model is written with the onnx package (PyPI through scripts/pyenv.sh; exit 77 = skipped).
# Usage: test_onnx_chw.sh SOURCE_DIR path/to/kiln
set -u -o pipefail
S=${1:?usage: test_onnx_chw.sh SOURCE_DIR path/to/kiln}
K=${2:?usage: test_onnx_chw.sh SOURCE_DIR path/to/kiln}
PY=$(bash "$S/scripts/pyenv.sh" onnx onnx onnxruntime numpy) || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" - "$tmp" <<'PY' || { echo "FAIL: could not write the model"; exit 1; }
import sys, zlib, struct, numpy as np, onnx, onnxruntime as ort
from onnx import helper as h, numpy_helper as nh, TensorProto as T
d = sys.argv[1]
rng = np.random.default_rng(3)
w = rng.normal(0, 0.5, (4, 3, 3, 3)).astype(np.float32); b = rng.normal(0, 0.1, 4).astype(np.float32)
fw = rng.normal(0, 1, (4, 5)).astype(np.float32); fb = rng.normal(0, 0.1, 5).astype(np.float32)
g = h.make_graph([h.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), h.make_node("Relu", ["c"], ["r"]),
                  h.make_node("GlobalAveragePool", ["r"], ["p"]), h.make_node("Flatten", ["p"], ["f"]),
                  h.make_node("Gemm", ["f", "fw", "fb"], ["y0"]), h.make_node("Softmax", ["y0"], ["y"], axis=1)], "chw",
                 [h.make_tensor_value_info("x", T.FLOAT, ["N", 3, 6, 5])], [h.make_tensor_value_info("y", T.FLOAT, ["N", 5])],
                 [nh.from_array(w, "w"), nh.from_array(b, "b"), nh.from_array(fw, "fw"), nh.from_array(fb, "fb")])
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, d + "/chw.onnx")
img = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)          # H, W, C
raw = b"".join(b"\0" + img[r].tobytes() for r in range(6))
chunk = lambda t, x: struct.pack(">I", len(x)) + t + x + struct.pack(">I", zlib.crc32(t + x) & 0xffffffff)
open(d + "/x.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 5, 6, 8, 2, 0, 0, 0))
                                + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
x = (img.astype(np.float32) / 255).transpose(2, 0, 1)[None]    # kiln predict --image scales pixels to [0, 1]
y = ort.InferenceSession(d + "/chw.onnx").run(None, {"x": x})[0][0]
open(d + "/want", "w").write("%d %.1f" % (int(y.argmax()), 100 * float(y.max())))
PY
out=$("$K" predict --model-file "$tmp/chw.onnx" --image "$tmp/x.png" 2>&1)
rc=$?
read -r cls pct <"$tmp/want"
echo "$out"
if [ $rc -ne 0 ]; then echo "FAIL: kiln predict --image on a channels-first model (rc $rc)"; exit 1; fi
if ! grep -qE "(class_)?$cls[^0-9].*$pct%|$pct%.*(class_)?$cls[^0-9]" <<<"$out"; then
  echo "FAIL: wanted class $cls at $pct% (onnxruntime on the NCHW pixels)"; exit 1
fi
echo "test_onnx_chw: passed (class $cls, $pct%)"
