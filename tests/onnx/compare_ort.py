"""Kiln's exported ONNX models against onnxruntime (tests/onnx/test_onnx_ort.sh runs it).

For every built-in model (onnx_probe presets: the zoo as it is at the time) and a C-API model
with every layer type and activation (onnx_probe mixed): a checkpoint trained a few steps, `kiln
export`, onnx.checker on the file, onnxruntime's probabilities against Kiln's (onnx_probe probs,
the same inputs: Fashion-MNIST test images for 28x28x1 models when installed, else seeded
uniform noise), and Kiln's own import of the file (round trip). Also a PyTorch-style NCHW model
written with onnx.helper, imported with nhwc_input. Fails when a probability differs by 1e-4
or more, or a prediction (argmax) differs."""
import gzip
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

KILN, PROBE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
FASHION = os.environ.get("KILN_FASHION", "/usr/share/datasets/fashion-mnist")
N = int(os.environ.get("KILN_ONNX_ORT_N", "1000"))
TOL = 1e-4


def run(*cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        sys.exit("FAIL: %s\n%s" % (" ".join(cmd), r.stdout))
    return r.stdout


def inputs(shape, n):
    imgs = os.path.join(FASHION, "t10k-images-idx3-ubyte.gz")
    if tuple(shape) == (28, 28, 1) and os.path.exists(imgs):
        with gzip.open(imgs) as f:
            x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)[:n]
        return x.astype(np.float32) / 255.0, "Fashion-MNIST test images"
    return np.random.default_rng(7).random((n,) + tuple(shape), dtype=np.float32), "uniform noise"


def softmax(z):
    z = z.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ort_probs(path, x, probabilities=False):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    out = np.concatenate([s.run(None, {name: x[i:i + 100]})[0] for i in range(0, len(x), 100)]).reshape(len(x), -1)
    return out.astype(np.float64) if probabilities else softmax(out)


def kiln_probs(args, x):
    xf, pf = os.path.join(WORK, "x.f32"), os.path.join(WORK, "p.f32")
    x.astype("<f4").tofile(xf)
    run(PROBE, *args[:1], *args[1:2], xf, pf, *args[2:])
    return np.fromfile(pf, "<f4").reshape(len(x), -1).astype(np.float64)


def compare(name, a, b, what):
    d = float(np.abs(a - b).max())
    same = int((a.argmax(1) == b.argmax(1)).sum())
    ok = d < TOL and same == len(a)
    print("%-12s %-26s max |dp| %.2e  argmax same %d/%d  %s" % (name, what, d, same, len(a), "ok" if ok else "FAIL"))
    return ok


def nchw_model(path):
    """A PyTorch-style NCHW CNN: Conv(+bias) BN Relu MaxPool Conv Relu GlobalAveragePool Flatten Gemm Softmax."""
    rng = np.random.default_rng(3)
    w = lambda *s: numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32))
    inits = []
    for nm, arr in [("c1.w", w(6, 3, 3, 3)), ("c1.b", w(6)), ("bn.s", w(6)), ("bn.b", w(6)), ("bn.m", w(6)),
                    ("c2.w", w(8, 6, 3, 3)), ("fc.w", w(5, 8)), ("fc.b", w(5))]:
        arr.name = nm
        inits.append(arr)
    v = numpy_helper.from_array((np.abs(rng.standard_normal(6)) + 0.5).astype(np.float32), "bn.v")
    inits.append(v)
    nodes = [helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["a", "bn.s", "bn.b", "bn.m", "bn.v"], ["b"], epsilon=1e-5),
             helper.make_node("Relu", ["b"], ["c"]),
             helper.make_node("MaxPool", ["c"], ["d"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["d", "c2.w"], ["e"], strides=[2, 2], auto_pad="SAME_UPPER"),
             helper.make_node("Relu", ["e"], ["f"]),
             helper.make_node("GlobalAveragePool", ["f"], ["g"]),
             helper.make_node("Flatten", ["g"], ["h"]),
             helper.make_node("Gemm", ["h", "fc.w", "fc.b"], ["i"], transB=1),
             helper.make_node("Softmax", ["i"], ["y"])]
    g = helper.make_graph(nodes, "nchw_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


def main():
    os.makedirs(WORK, exist_ok=True)
    ok = True
    print("onnxruntime %s, onnx %s; pass: max |p_kiln - p_ort| < %g and the same argmax" % (ort.__version__, onnx.__version__, TOL))
    # gpt_char / gpt2 take token ids (no image data to train them on): test_gpt_onnx_ort runs gpt_char
    # and two small GPTs from int64 ids (gpt2 is the same layers at 124M parameters, a 500 MB file)
    models = [m for m in run(PROBE, "presets").split() if not m.startswith("gpt")] + ["mixed", "apps", "layers1d"]
    for name in models:
        ckpt, path = os.path.join(WORK, name + ".safetensors"), os.path.join(WORK, name + ".onnx")
        if name in ("mixed", "apps", "layers1d"):
            run(PROBE, name, ckpt)
        else:
            data = "synthetic"
            probe_model = subprocess.run([KILN, "summary", "--model", name], stdout=subprocess.PIPE, text=True).stdout
            if "(None, 28, 28, 1)" in probe_model and os.path.exists(os.path.join(FASHION, "train-images-idx3-ubyte.gz")):
                data = FASHION
            run(KILN, "train", "--model", name, "--data", data, "--limit", "512", "--epochs", "1", "--batch-size", "64",
                "--verbose", "0", "--prefetch", "0", "--save", ckpt)
        run(KILN, "export", "--load", ckpt, "--output", path)
        onnx.checker.check_model(onnx.load(path), full_check=True)
        shape = [int(v) for v in run(PROBE, "shape", ckpt).split()]
        x, what = inputs(shape, N)
        pk = kiln_probs(["probs", ckpt], x)
        ok &= compare(name, pk, ort_probs(path, x), "onnxruntime (%d %s)" % (len(x), what.split()[0]))
        if name not in ("apps", "layers1d"):     # Kiln's ONNX import lacks some of their ops (Pad, Resize, HardSwish, ConvTranspose, ...): onnxruntime judges
            ok &= compare(name, pk, kiln_probs(["import", path], x), "kiln import of the export")
    path = os.path.join(WORK, "nchw_cnn.onnx")
    nchw_model(path)
    x = np.random.default_rng(11).random((200, 3, 16, 16), dtype=np.float32)
    pk = kiln_probs(["import", path, "--nhwc"], np.ascontiguousarray(x.transpose(0, 2, 3, 1)))
    ok &= compare("nchw_cnn", pk, ort_probs(path, x, probabilities=True), "import --nhwc vs onnxruntime")
    print("checker: every exported file passed onnx.checker.check_model(full_check=True)")
    sys.exit(0 if ok else 1)


main()
