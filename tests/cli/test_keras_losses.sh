#!/usr/bin/env bash
# Kiln's losses and metrics against Keras 3's (tensorflow-cpu from PyPI through scripts/pyenv.sh;
# exit 77 = skipped when PyPI cannot be reached): the same outputs and labels given to both, the
# losses after mse (huber with delta 0.7) and every metric of compile's metric_list, for class ids
# (Keras gets their one-hot rows) and for one output unit with f32 values (-1/1 hinge targets
# and 0/1 ones), within 1e-5. Usage: test_keras_losses.sh path/to/loss_metric_probe SOURCE_DIR
set -u -o pipefail
P=${1:?usage: test_keras_losses.sh path/to/loss_metric_probe SOURCE_DIR}
S=${2:?usage}
PY=$(bash "$S/scripts/pyenv.sh" tensorflow tensorflow-cpu) || exit 77
export TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES=
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$PY" - "$P" "$tmp" <<'PY' 2>&1 | grep -v "^WARNING\|^I0000\|oneDNN custom operations"
import subprocess, sys
import numpy as np, keras
probe, tmp = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
L, M = keras.losses, keras.metrics
bad = checked = 0

def kiln(p, y, ext, mlist):
    p.astype(np.float32).tofile(f"{tmp}/p.f32")
    y.tofile(f"{tmp}/y.{ext}")
    out = subprocess.run([probe, f"{tmp}/p.f32", str(p.shape[0]), str(p.shape[1]), f"{tmp}/y.{ext}", mlist],
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"FAIL: probe: {out.stderr}")
    return {(k, n): float(v) for k, n, v in (l.split() for l in out.stdout.split("\n") if l)}

def compare(case, got, want):
    global bad, checked
    for key, w in want.items():
        g = got.get(key)
        checked += 1
        if g is None or not abs(g - w) <= 1e-5 + 1e-5 * abs(w):
            bad += 1
            print(f"FAIL: {case} {key[0]} {key[1]}: Kiln {g}, Keras {w:.9g}")

losses = {"mae": L.MeanAbsoluteError(), "huber": L.Huber(delta=0.7), "log_cosh": L.LogCosh(), "kl_divergence": L.KLDivergence(),
          "poisson": L.Poisson(), "hinge": L.Hinge(), "squared_hinge": L.SquaredHinge(), "categorical_hinge": L.CategoricalHinge(),
          "cosine_similarity": L.CosineSimilarity(), "mse": L.MeanSquaredError()}
def metric_values(metrics, yt, p):
    out = {}
    for name, (m, ytrue) in metrics.items():
        m.update_state(ytrue, p)
        out[("metric", name)] = float(m.result())
    return out

# class ids: 50 examples, 4 outputs in (0, 1) (softmax rows for some, raw for others)
n, c = 50, 4
p = rng.random((n, c)).astype(np.float32)
p[:25] = np.exp(p[:25] * 3) / np.exp(p[:25] * 3).sum(1, keepdims=True)
ids = rng.integers(0, c, n).astype(np.int32)
oh = np.eye(c, dtype=np.float32)[ids]
want = {("loss", k): float(l(oh, p)) for k, l in losses.items()}
metrics = {"binary_accuracy": (M.BinaryAccuracy(), oh), "categorical_accuracy": (M.CategoricalAccuracy(), oh),
           "sparse_categorical_accuracy": (M.SparseCategoricalAccuracy(), ids),
           "top2": (M.SparseTopKCategoricalAccuracy(k=2), ids), "top_k_categorical_accuracy": (M.TopKCategoricalAccuracy(k=5), oh),
           "precision": (M.Precision(), oh), "recall": (M.Recall(), oh), "auc": (M.AUC(), oh),
           "mae": (M.MeanAbsoluteError(), oh), "mse": (M.MeanSquaredError(), oh), "rmse": (M.RootMeanSquaredError(), oh)}
want.update(metric_values(metrics, oh, p))
mlist = ("binary_accuracy,categorical_accuracy,sparse_categorical_accuracy,sparse_top_k_categorical_accuracy:2@top2,"
         "top_k_categorical_accuracy,precision,recall,auc,mae,mse,rmse")
compare("class ids", kiln(p, ids, "i32", mlist), want)

# one output unit, f32 values: -1/1 targets (hinge keeps them), then 0/1 targets (hinge converts)
for case, yv in (("values -1/1", rng.choice([-1.0, 1.0], 64)), ("values 0/1", rng.choice([0.0, 1.0], 64))):
    yv = yv.astype(np.float32)
    p1 = (rng.random((64, 1)) * 1.6 - 0.3).astype(np.float32)
    p1[p1 <= 0.01] = 0.05                      # poisson's log and kl's clip stay smooth
    yt = yv[:, None]
    want = {("loss", k): float(l(yt, p1)) for k, l in losses.items() if k not in ("poisson", "kl_divergence") or case == "values 0/1"}
    want.update(metric_values({"mae": (M.MeanAbsoluteError(), yt), "rmse": (M.RootMeanSquaredError(), yt),
                               "precision": (M.Precision(), yt), "auc": (M.AUC(), yt)}, yt, p1))   # p1 outside [0, 1] too
    compare(case, kiln(p1, yv, "f32", "mae,rmse,precision,auc"), want)
print(f"test_keras_losses: {checked - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
