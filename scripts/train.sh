#!/usr/bin/env bash
# The main job: install what is missing, build, train the default model (fashion_cnn) on the real
# Fashion-MNIST and print the test accuracy and the time it took. Extra args go to `kiln train`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
exec build/kiln train "$@"
