#!/usr/bin/env bash
# Install what is missing, build, run the tests: the C tests through ctest (unit tests, op
# conformance, CLI, ...), then the Python package's pytest suite (tests/python).
#   bash scripts/test.sh         the quick run (~5 min on 2 cores, build included): every test but
#                                those labelled `long` (`ctest -j$(nproc) -LE long`); pytest runs
#                                against the build tree (python/dev_build.sh, PYTHONPATH=python)
#   bash scripts/test.sh --all   everything, as CI (.ci/run): the `long` tests too (end-to-end runs
#                                against Keras, onnxruntime, pip, and tests over ~20 s; the list is
#                                KILN_LONG_TESTS in CMakeLists.txt), among them test_wheel (`pip
#                                wheel .` from a copy of the checkout, installed in a fresh venv);
#                                pytest then runs in a venv with that same wheel installed
# The Python part is skipped, saying why, when python3-venv or PyPI (pytest, numpy,
# scikit-build-core) cannot be had.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
scripts/setup.sh
scripts/build.sh
stamp=$(mktemp); work=$(mktemp -d)
trap 'rm -rf "$stamp" "$work"' EXIT
all=0; [ "${1:-}" = "--all" ] && all=1
if [ $all -eq 1 ]; then (cd build && ctest -j"$(nproc)" --output-on-failure)
else (cd build && ctest -j"$(nproc)" --output-on-failure -LE long); fi

# ---- the Python package: pytest in a venv (scripts/pyenv.sh: ~/.cache/kiln/venv-pytest) ----
if ! compgen -G "python/src/*.c" >/dev/null; then
  echo "python tests: skipped (no python/src/*.c yet)"; exit 0
fi
set +e
py=$(bash scripts/pyenv.sh pytest pytest numpy)
rc=$?
set -e
if [ $rc -eq 77 ]; then echo "python tests: skipped (see the pyenv line above)"; exit 0; fi
[ $rc -eq 0 ] || exit $rc
if ! "$py" -c 'import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
  echo "python tests: skipped (no Python.h to build the extension: apt-get install python3-dev)"; exit 0
fi
if [ $all -eq 0 ]; then   # the quick run: the extension built against build/libkiln.so, from the checkout
  PYTHON="$py" bash python/dev_build.sh build
  cd "$work"
  set +e
  PYTHONPATH="$root/python" KILN_CLI="$root/build/kiln" "$py" -m pytest -p no:cacheprovider "$root/tests/python"
  rc=$?
  set -e
  [ $rc -eq 5 ] && { echo "python tests: no tests collected in tests/python yet"; rc=0; }
  exit $rc
fi
whl=$(ls build/python-wheel/kiln-*.whl 2>/dev/null | head -n1 || true)
if [ -n "$whl" ] && [ "$whl" -nt "$stamp" ]; then
  # the wheel test_wheel just built and checked
  "$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$whl"
else   # test_wheel did not leave one (skipped or excluded): build it here
  if ! "$py" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps . ; then
    "$py" -m pip download -q --no-deps -d "$work/dl" "scikit-build-core>=0.10" >/dev/null 2>&1 ||
      { echo "python tests: skipped (pip cannot fetch scikit-build-core: is PyPI reachable?)"; exit 0; }
    echo "python tests: pip install . failed" >&2; exit 1
  fi
fi
# from a folder outside the checkout, so that `import kiln` is the installed package
cd "$work"
set +e
"$py" -m pytest -p no:cacheprovider "$root/tests/python"
rc=$?
set -e
[ $rc -eq 5 ] && { echo "python tests: no tests collected in tests/python yet"; rc=0; }
exit $rc
