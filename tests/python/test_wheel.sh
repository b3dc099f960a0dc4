#!/usr/bin/env bash
# The wheel stands alone: `pip wheel .` in a temporary copy of the checkout (its tracked and
# untracked-not-ignored files, as a clean clone would have them plus uncommitted work), the copy
# and its build tree deleted, the wheel installed into a fresh venv and run from a folder outside
# the repository with no PYTHONPATH / LD_LIBRARY_PATH / KILN_CUDA_MODULE. Checks: `import kiln`
# comes from the venv; libkiln.so (and libkiln_cuda.so when the wheel has it) are loaded from the
# package folder, nothing from the checkout; the version is CMakeLists.txt's; without a GPU Kiln
# says once that it uses the CPU; a tiny Keras-style fit runs (once python/kiln has keras).
#   test_wheel.sh [--out DIR] [SOURCE_DIR]
#     --out DIR   leave the checked wheel in DIR (scripts/test.sh installs it for pytest)
# ctest: test_wheel, label `python` (cmake/KilnPython.cmake). Exit 77 (skipped) with the reason
# when python3-venv, Python's headers or PyPI (scikit-build-core, numpy) are missing, or when
# python/src has no extension sources yet.
set -uo pipefail
out=""
if [ "${1:-}" = "--out" ]; then out=${2:?--out DIR}; shift 2; fi
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
skip() { echo "test_wheel: SKIPPED: $*" >&2; exit 77; }
fail() { echo "test_wheel: FAILED: $*" >&2; exit 1; }

compgen -G "$src/python/src/*.c" >/dev/null || skip "no python/src/*.c yet (the extension kiln._kiln)"
# the build venv: scikit-build-core (PEP 517 backend) + numpy, cached like every PyPI venv here
bpy=$(bash "$src/scripts/pyenv.sh" wheel-build "scikit-build-core>=0.10" numpy) || exit 77
"$bpy" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
  skip "no Python.h for $("$bpy" -c 'import sys; print(sys.executable)') (apt-get install python3-dev)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/dist" "$tmp/run"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _ |
    tar -cf - --null -T -) | tar -xf - -C "$tmp/src" || fail "copying the checkout"
else   # not a git checkout (an unpacked sdist): everything but build trees
  (cd "$src" && tar -cf - --exclude='./build*' --exclude='./.git' .) | tar -xf - -C "$tmp/src" || fail "copying the source tree"
fi

# 1. pip wheel . (the build tree inside the copy, deleted with it)
t0=$(date +%s)
if ! "$bpy" -m pip wheel --disable-pip-version-check --no-build-isolation --no-deps -w "$tmp/dist" \
     --config-settings=build-dir="$tmp/src/build-wheel" "$tmp/src" >"$tmp/build.log" 2>&1; then
  tail -n 60 "$tmp/build.log" >&2
  fail "pip wheel . (log above)"
fi
t1=$(date +%s)
whl=$(ls "$tmp"/dist/kiln-*.whl 2>/dev/null | head -n1)
[ -n "$whl" ] || fail "pip wheel made no kiln-*.whl"
case $(basename "$whl") in *-cp311-abi3-linux_*.whl) ;; *) fail "$(basename "$whl") is not a cp311-abi3 wheel" ;; esac
echo "test_wheel: built $(basename "$whl") ($(du -k "$whl" | cut -f1) KiB) in $((t1 - t0)) s"
"$bpy" -m zipfile -l "$whl" | awk '/^kiln\// { print "  " $1, $NF }'
rm -rf "$tmp/src"

# 2. a fresh venv with the wheel (numpy from PyPI)
python3 -m venv "$tmp/venv" >/dev/null 2>&1 || skip "cannot create a venv (apt-get install python3-venv)"
vpy=$tmp/venv/bin/python
if ! "$vpy" -m pip install -q --disable-pip-version-check "$whl" >"$tmp/install.log" 2>&1; then
  "$vpy" -m pip install -q --disable-pip-version-check --no-deps "$whl" >/dev/null 2>&1 || { cat "$tmp/install.log" >&2; fail "pip install $(basename "$whl")"; }
  skip "the wheel installs but numpy does not (is PyPI reachable?)"
fi

# 3. run it from outside the repository
cat >"$tmp/run/check.py" <<'EOF'
import os, subprocess, sys
src, want_version = sys.argv[1], sys.argv[2]
import kiln._kiln as k            # kiln may be a bare namespace package while python/kiln is missing
pkg = os.path.dirname(os.path.realpath(k.__file__))
assert pkg.startswith(os.path.realpath(sys.prefix) + "/"), f"kiln._kiln imported from {pkg}, not the venv {sys.prefix}"
assert k.version() == want_version, f"kiln._kiln.version() {k.version()!r}, CMakeLists.txt says {want_version!r}"
maps = {l.split()[-1] for l in open("/proc/self/maps") if "/" in l}
libkiln = sorted(m for m in maps if os.path.basename(m).startswith("libkiln"))
assert os.path.join(pkg, "libkiln.so") in libkiln, f"libkiln.so not loaded from the package: {libkiln}"
stray = sorted(m for m in maps if m.startswith(src + "/"))
assert not stray, f"loaded from the checkout: {stray}"
has_cuda = os.path.exists(os.path.join(pkg, "libkiln_cuda.so"))
if hasattr(k, "built_with_cuda"):
    assert k.built_with_cuda() == has_cuda, f"built_with_cuda() {k.built_with_cuda()}, libkiln_cuda.so in the package: {has_cuda}"
print(f"kiln {k.version()} from {pkg}: {' '.join(sorted(f for f in os.listdir(pkg) if f.endswith('.so')))}")

# a tiny fit in a child process whose stderr is read: without a GPU, one "using the CPU" line
fit = r'''
import numpy as np, kiln, kiln._kiln as k
if hasattr(kiln, "keras"):
    tf = kiln
    rng = np.random.default_rng(0)
    x = rng.random((64, 4), dtype=np.float32); y = (x.sum(axis=1) > 2).astype(np.float32)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    h = model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert len(h.history["loss"]) == 2, h.history
    p = model.predict(x)
    assert p.shape == (64, 1), p.shape
    model.fit(x, y, epochs=1, batch_size=16, verbose=0)      # a second fit: no second notice
    print("fit: loss", [round(float(v), 4) for v in h.history["loss"]])
else:
    print("fit: not run (python/kiln has no keras yet)")
print("gpu:", k.gpu_available() if hasattr(k, "gpu_available") else "unknown")
'''
r = subprocess.run([sys.executable, "-c", fit], capture_output=True, text=True)
sys.stdout.write(r.stdout)
if r.returncode != 0:
    sys.stderr.write(r.stderr)
    sys.exit("the tiny fit failed")
said = [l for l in r.stderr.splitlines() if "using the CPU" in l]
if "gpu: True" in r.stdout:
    assert not said, f"a GPU is available, yet: {said}"
elif "fit: loss" in r.stdout:
    assert len(said) == 1, f"the CPU notice {len(said)} times on stderr (want 1):\n{r.stderr}"
    print("stderr:", said[0])
EOF
ver=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
(cd "$tmp/run" && env -u PYTHONPATH -u LD_LIBRARY_PATH -u KILN_CUDA_MODULE -u PYTHONHOME \
   "$vpy" -I "$tmp/run/check.py" "$src" "$ver") || fail "the installed wheel (output above)"
if [ -n "$out" ]; then
  mkdir -p "$out" && rm -f "$out"/kiln-*.whl && cp "$whl" "$out/" && echo "test_wheel: wheel left in $out/$(basename "$whl")"
fi
echo "test_wheel: OK"
