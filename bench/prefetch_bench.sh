#!/usr/bin/env bash
# Training step time with and without prefetch vs the compute-only step (cifar_cnn, batch 128,
# CIFAR-shaped synthetic data). Builds bench/prefetch_bench.c against an existing build directory's
# libkiln.a and runs it.
#   bash bench/prefetch_bench.sh [steps] [model threads] [workers] [rounds]     (BUILD=build-dir, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ ! -f "$BUILD/libkiln.a" ]; then
  cmake -S . -B "$BUILD" >/dev/null && cmake --build "$BUILD" -j"$(nproc)" --target kiln_static >/dev/null
fi
${CC:-cc} -O2 -std=gnu11 -Wall -Wextra -Iinclude bench/prefetch_bench.c "$BUILD/libkiln.a" \
  -lopenblas -lpng -ljpeg -lz -lm -ldl -lpthread -fopenmp -o "$BUILD/prefetch_bench"
"$BUILD/prefetch_bench" "$@"
