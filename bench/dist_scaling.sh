#!/bin/bash
# Data-parallel scaling on this machine (issue 11): cifar_cnn training images/s with
#   1 process x 2 threads   vs   2 MPI processes x 1 thread (global batch 128 = 64 per process)
# and the gradient all-reduce time per step against the step time (KILN_DIST_STATS=1: wall time
# inside MPI_Allreduce on rank 0, waiting for the other rank included).
# Usage: bench/dist_scaling.sh [build-dir] [examples]   (default build, 6144: 48 steps per epoch)
# Epoch 2's images/s is reported (epoch 1 includes MPI start-up and first-touch allocations).
set -e
B=${1:-build}
N=${2:-6144}
K="$B/kiln"
MPI=(mpirun -np 2 --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=(train --model cifar_cnn --data synthetic --limit "$N" --epochs 2 --batch-size 128 --verbose 2 --prefetch 2 --workers 1)
echo "machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$K" "${T[@]}" --threads 2 --history "$tmp/one.csv" > "$tmp/one.txt" 2>&1
KILN_DIST_STATS=1 "${MPI[@]}" -x KILN_DIST_STATS "$K" "${T[@]}" --threads 1 --history "$tmp/two.csv" > "$tmp/two.txt" 2>&1
one=$(sed -n 3p "$tmp/one.csv" | cut -d, -f8)
two=$(sed -n 3p "$tmp/two.csv" | cut -d, -f8)
ar=$(grep "All-reduce:" "$tmp/two.txt" || true)
ms=$(sed -E 's/.*\(([0-9.]+) ms per step\).*/\1/' <<<"$ar")
step_ms=$(awk -v ips="$two" 'BEGIN{printf "%.1f", 128 / ips * 1000}')
echo "cifar_cnn, global batch 128, $N examples per epoch, epoch 2:"
echo "  1 process  x 2 threads: $one images/s"
echo "  2 processes x 1 thread: $two images/s  (scaling efficiency vs 1x2: $(awk -v a="$two" -v b="$one" 'BEGIN{printf "%.0f%%", 100*a/b}'))"
echo "  all-reduce: $ar"
echo "  step time with 2 processes: $step_ms ms; all-reduce share: $(awk -v a="$ms" -v s="$step_ms" 'BEGIN{printf "%.1f%%", 100*a/s}') (both epochs' steps averaged)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg) (the machine is shared with other sessions)"
