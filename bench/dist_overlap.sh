#!/bin/bash
# The gradient all-reduce overlapped with the backward pass or not (issue 11): cifar_cnn on
# 2 MPI processes x 1 thread, global batch 128, epoch 2's training images/s and the all-reduce
# time per step on rank 0 (KILN_DIST_STATS=1: seconds inside MPI calls for gradients, i.e. the
# communication not hidden behind the backward pass), KILN_OVERLAP=1 and 0 alternated.
# Usage: bench/dist_overlap.sh [build-dir] [examples] [repeats]   (default build, 3072, 2)
set -e
B=${1:-build}
N=${2:-3072}
R=${3:-2}
MPI=(mpirun -np 2 --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
T=(train --model cifar_cnn --data synthetic --limit "$N" --epochs 2 --batch-size 128 --verbose 2 --prefetch 2 --workers 1 --threads 1)
echo "machine: $(nproc) cores; cifar_cnn, 2 MPI ranks x 1 thread, global batch 128, $N examples per epoch, epoch 2"
for ((r = 1; r <= R; r++)); do
    for ov in 1 0; do
        load=$(cut -d' ' -f1 /proc/loadavg)
        KILN_OVERLAP=$ov KILN_DIST_STATS=1 "${MPI[@]}" -x KILN_OVERLAP -x KILN_DIST_STATS "$B/kiln" "${T[@]}" \
            --history "$tmp/h$ov.csv" > "$tmp/o$ov.txt" 2>&1
        ms=$(sed -nE 's/.*\(([0-9.]+) ms per step\).*/\1/p' "$tmp/o$ov.txt")
        echo "run $r KILN_OVERLAP=$ov: $(sed -n 3p "$tmp/h$ov.csv" | cut -d, -f8) images/s, all-reduce $ms ms per step (load before $load)"
    done
done
