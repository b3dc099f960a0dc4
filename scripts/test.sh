#!/usr/bin/env bash
# Install what is missing, build, run every test (unit tests + op conformance) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
cd build && ctest --output-on-failure
