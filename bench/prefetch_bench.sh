#!/usr/bin/env bash
# Training step time with and without prefetch vs the compute-only step (cifar_cnn, batch 128,
# CIFAR-shaped synthetic data). Builds the CMake target bench_prefetch (bench/prefetch_bench.c,
# linked to libkiln.a with every library it needs) in a build directory and runs it.
#   bash bench/prefetch_bench.sh [steps] [model threads] [workers] [rounds]     (BUILD=build-dir, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD" -j"$(nproc)" --target bench_prefetch >/dev/null
"$BUILD/bench_prefetch" "$@"
