#!/usr/bin/env bash
# Configures and builds Kiln into build/ (Release). Prints Kiln's configure report: which optional
# dependencies were found and what each enables ("-- oneDNN: found ...", "-- CUDA: not found ...").
# CMake's own chatter (compiler checks) is left out; the whole log is build/configure.log.
# Extra arguments go to cmake's configure step (e.g. -DKILN_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >build/configure.log 2>&1; then
  cat build/configure.log >&2; exit 1
fi
# Kiln's report lines are "-- Name: found/not found/built/..." (message(STATUS) in CMakeLists.txt
# and cmake/*.cmake); CMake's "-- Found X", "-- Looking for", "-- Check ..." lines are not Kiln's
grep -E '^-- [A-Za-z][A-Za-z0-9 ./+-]*: ' build/configure.log | grep -vE '^-- (Found|Looking|Check|Detecting|Performing|Build files|The [A-Z]+ compiler)' || true
cmake --build build -j"$(nproc)"
