"""Kiln's predictions against Keras 3's on the same weights: for each model JSON, Keras builds it,
its weights (Keras's random init, batch-norm statistics, Normalization state and biases moved off
their initial values) are written for keras_apps_check --predict, and both predict 8 random
images. Pass: max |y_kiln - y_keras| <= TOL * max(1, max |y_keras|) (float32 through deep nets:
NASNetMobile's activations reach thousands with untrained statistics).
Usage: compare_predictions.py KERAS_APPS_CHECK WORK_DIR MODEL.json..."""
import os, sys, subprocess, numpy as np
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras
# Keras's initializers draw from the global seed: fixed, so a run is repeatable (unseeded, NASNetMobile's
# untrained activations in the thousands sometimes came out past TOL, sometimes not)
keras.utils.set_random_seed(7)
check, work = sys.argv[1], sys.argv[2]
TOL = 5e-5
bad = 0
for json_path in sys.argv[3:]:
    name = os.path.basename(json_path)[:-5]
    d = os.path.join(work, "w_" + name); os.makedirs(d, exist_ok=True)
    m = keras.models.model_from_json(open(json_path).read())
    rng = np.random.default_rng(5)
    dw = {l.name for l in m.layers if l.__class__.__name__ == "DepthwiseConv2D"}   # Kiln: depthwise_kernel
    ls = {l.name for l in m.layers if l.__class__.__name__ == "LayerScale"}        # an unnamed variable (its attribute: gamma)
    for w in m.weights:     # Keras's own random init; BN statistics and adapt state moved off 0/1
        v = np.asarray(w.numpy(), dtype=np.float32)
        if w.path.endswith(("moving_mean", "/mean")): v = rng.normal(0, 0.5, v.shape).astype(np.float32)
        if w.path.endswith(("moving_variance", "/variance")): v = rng.uniform(0.5, 2, v.shape).astype(np.float32)
        if w.path.endswith(("gamma", "beta", "bias", "alpha")) or w.path.rpartition("/")[0].rpartition("/")[2] in ls:
            v = v + rng.normal(0, 0.2, v.shape).astype(np.float32)
        if str(w.dtype).startswith("float"): w.assign(v)
        layer, _, wname = w.path.rpartition("/")
        layer = layer.rpartition("/")[2]      # a layer of a nested model: its own name (Kiln inlines it)
        if layer in dw and wname == "kernel": wname = "depthwise_kernel"
        if layer in ls: wname = "gamma"
        v.tofile(os.path.join(d, layer + "__" + wname + ".f32"))
    for l in m.layers:      # Normalization reads its adapt state through finalize_state (as loading weights does)
        if l.__class__.__name__ == "Normalization" and getattr(l, "input_mean", None) is None: l.finalize_state()
    shape = (8,) + tuple(m.inputs[0].shape[1:])
    x = (rng.random(shape, dtype=np.float32) * 255).astype(np.float32)
    x.tofile(os.path.join(d, "x.f32"))
    yk = m.predict(x, verbose=0)
    out = os.path.join(d, "y.f32")
    r = subprocess.run([check, "--predict", json_path, d, "8", out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode: print("FAIL %s: %s" % (name, r.stdout.strip()[-400:])); bad += 1; continue
    y = np.fromfile(out, np.float32).reshape(yk.shape)
    diff = float(np.abs(y - yk).max()); scale = float(np.abs(yk).max())
    ok = diff <= TOL * max(1.0, scale)
    print("%s %s: Kiln's predictions with Keras's weights differ by %.3g (outputs up to %.3g)" % ("ok  " if ok else "FAIL", name, diff, scale))
    bad += not ok
sys.exit(1 if bad else 0)
