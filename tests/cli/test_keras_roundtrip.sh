#!/usr/bin/env bash
# Kiln's model JSON is Keras' too: real Keras 3 (tensorflow-cpu from PyPI, through
# scripts/pyenv.sh; exit 77 = skipped when PyPI cannot be reached) loads what `kiln summary
# --json` writes, for every built-in model and for every Keras-written test model read by Kiln:
# same parameter count, and for the Keras 3 test models the same layer configs as the file Keras
# wrote (but ReLU, which Kiln writes as Activation). (Keras 3 cannot load tf.keras 2 files: for
# those the parameter count is compared with what tf.keras 2 said.)
# Usage: test_keras_roundtrip.sh path/to/kiln SOURCE_DIR
set -u -o pipefail
K=${1:?usage: test_keras_roundtrip.sh path/to/kiln SOURCE_DIR}
S=${2:?usage: test_keras_roundtrip.sh path/to/kiln SOURCE_DIR}
PY=$(bash "$S/scripts/pyenv.sh" tensorflow tensorflow-cpu) || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
pairs=()
for f in "$S"/tests/data/keras/keras3/*.json "$S"/tests/data/keras/tf_keras2/*.json; do
  out=$tmp/$(basename "$(dirname "$f")")_$(basename "$f")
  "$K" summary --model-file "$f" --json "$out" >/dev/null 2>"$tmp/err" || { echo "FAIL: kiln summary --model-file $f --json: $(cat "$tmp/err")"; fail=1; continue; }
  case $f in
    */prelu_nested.json) continue ;;   # Kiln inlines a nested Sequential: its JSON has the inner layers flat, by design
    */tf_keras2/*) pairs+=("=$(awk '$1 == "params" { print $2 }' "${f%.json}.expected")" "$out") ;;
    *) pairs+=("$f" "$out") ;;
  esac
done
models=$("$K" summary --help | tr '\n' ' ' | sed -n 's/.*models: \([^;]*\);.*/\1/p' | tr -d ',')
for p in $models; do
  params=$("$K" summary --model "$p" --json "$tmp/zoo_$p.json" 2>"$tmp/err" | sed -n 's/^Total params: \([0-9,]*\).*/\1/p' | tr -d ,)
  [ -n "$params" ] || { echo "FAIL: kiln summary --model $p --json: $(cat "$tmp/err")"; fail=1; continue; }
  pairs+=("=$params" "$tmp/zoo_$p.json")
done
TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES= "$PY" - "${pairs[@]}" <<'PY' 2>&1 | grep -v "^WARNING\|^I0000\|oneDNN custom operations" || fail=1
import json, sys
import keras

def load(text):
    m = keras.models.model_from_json(text)
    return m, {l["config"]["name"]: (l["class_name"], l["config"]) for l in json.loads(m.to_json())["config"]["layers"]}

bad = 0
args = sys.argv[1:]
for want, kiln in zip(args[0::2], args[1::2]):
    try:
        m, got = load(open(kiln).read())
    except Exception as e:
        print("FAIL: Keras cannot load Kiln's %s: %s" % (kiln, str(e)[:400])); bad += 1; continue
    if want.startswith("="):       # a built-in model (Kiln's count) or a tf.keras 2 file (its count)
        if m.count_params() != int(want[1:]):
            print("FAIL: %s: Keras counts %d parameters, Kiln %s" % (kiln, m.count_params(), want[1:])); bad += 1
        continue
    m0, orig = load(open(want).read())
    if m.count_params() != m0.count_params():
        print("FAIL: %s: %d parameters, Keras' own file %d" % (kiln, m.count_params(), m0.count_params())); bad += 1
    for name, (cls, cfg) in orig.items():
        if name not in got:
            print("FAIL: %s: layer %s is missing" % (kiln, name)); bad += 1; continue
        gcls, gcfg = got[name]
        if cls == "ReLU" and gcls == "Activation":      # Kiln's ReLU is an Activation
            continue
        diff = {k: (cfg.get(k), gcfg.get(k)) for k in set(cfg) | set(gcfg) if cfg.get(k) != gcfg.get(k)}
        if cls != gcls or diff:
            print("FAIL: %s: layer %s (%s, Kiln %s) differs: %s" % (kiln, name, cls, gcls, diff)); bad += 1
print("test_keras_roundtrip: %d models, %d failures" % (len(args) // 2, bad))
sys.exit(1 if bad else 0)
PY
exit $fail
