#!/usr/bin/env python3
"""Data-parallel scaling on paper (docs/SCALING.md): for each built-in model, from its real
parameter count and forward FLOPs per example (as `kiln summary --model NAME` prints them), the
gradient bytes each step all-reduces, the ring all-reduce time on 8 GPUs over NVLink and on 64 /
512 GPUs over 400 Gb/s InfiniBand, and the per-GPU and global batch that keeps that time under
10% of the step. Usage: python3 scripts/scaling.py build/kiln > table.md"""
import re
import subprocess
import sys

MODELS = ["mlp", "lenet5", "fashion_cnn", "resnet20", "resnet56", "inception", "cifar_cnn", "fast_cifar"]
# Assumptions (stated in the output)
GRAD_BYTES = 4                 # f32 gradients, as Kiln all-reduces them
NVLINK_BW = 900e9 / 2          # H200 NVLink: 900 GB/s total = 450 GB/s each direction per GPU
NVLINK_LAT = 5e-6              # per ring step (NCCL-like launch + hop latency)
IB_BW = 400e9 / 8              # 400 Gb/s InfiniBand, one NIC per GPU: 50 GB/s each direction
IB_LAT = 10e-6                 # per ring step across nodes
GPU_FLOPS = 400e12             # sustained per-GPU training throughput assumed: 40% of H200's 989 TFLOP/s dense bf16
TRAIN_FLOPS_FACTOR = 3         # forward + backward = 3 x forward FLOPs
COMM_SHARE = 0.10              # communication at most 10% of the step (nothing overlapped)
SCALES = [("8 GPUs, NVLink", 8, NVLINK_BW, NVLINK_LAT), ("64 GPUs, IB 400G", 64, IB_BW, IB_LAT),
          ("512 GPUs, IB 400G", 512, IB_BW, IB_LAT)]
# a model Kiln does not ship, for scale: ResNet-50's published count (25,557,032 parameters,
# 4.1 GFLOPs = 4.1e9 multiply-adds x 2 per 224x224 image)
REFERENCE = [("resnet50 (published)", 25557032, 8.2e9)]


def summary(kiln, model):
    out = subprocess.run([kiln, "summary", "--model", model], capture_output=True, text=True, check=True).stdout
    params = int(re.search(r"Trainable params: ([\d,]+)", out).group(1).replace(",", ""))
    flops = int(re.search(r"FLOPs per example: ([\d,]+)", out).group(1).replace(",", ""))
    return params, flops


def ring_seconds(n, nbytes, bw, lat):
    """Ring all-reduce: reduce-scatter + all-gather, 2(n-1) steps of nbytes/n each."""
    return 2 * (n - 1) / n * nbytes / bw + 2 * (n - 1) * lat


def fmt_time(s):
    return f"{s * 1e6:.0f} us" if s < 1e-3 else f"{s * 1e3:.2f} ms"


def main():
    kiln = sys.argv[1] if len(sys.argv) > 1 else "build/kiln"
    rows = [(m, *summary(kiln, m)) for m in MODELS] + REFERENCE
    print("| model | parameters | gradient bytes / step | " + " | ".join(f"all-reduce, {s[0]}" for s in SCALES) + " |")
    print("|---|---:|---:|" + "---:|" * len(SCALES))
    for name, params, flops in rows:
        nbytes = params * GRAD_BYTES
        times = [ring_seconds(n, nbytes, bw, lat) for _, n, bw, lat in SCALES]
        print(f"| {name} | {params:,} | {nbytes / 1e6:.2f} MB | " + " | ".join(fmt_time(t) for t in times) + " |")
    print()
    print("Per-GPU batch (and global batch) for the all-reduce to stay under 10% of the step, nothing overlapped:")
    print()
    print("| model | forward FLOPs / example | " + " | ".join(s[0] for s in SCALES) + " |")
    print("|---|---:|" + "---:|" * len(SCALES))
    for name, params, flops in rows:
        nbytes = params * GRAD_BYTES
        cells = []
        for _, n, bw, lat in SCALES:
            t_comm = ring_seconds(n, nbytes, bw, lat)
            # compute >= (1 - share) / share x comm; compute = batch x 3 x flops / GPU_FLOPS
            per_gpu = (1 - COMM_SHARE) / COMM_SHARE * t_comm * GPU_FLOPS / (TRAIN_FLOPS_FACTOR * flops)
            b = max(1, int(-(-per_gpu // 1)))
            cells.append(f"{b:,} ({b * n:,})")
        print(f"| {name} | {flops / 1e6:,.1f} M | " + " | ".join(cells) + " |")
    print()
    print(f"Assumptions: f32 gradients ({GRAD_BYTES} bytes each); flat ring all-reduce, 2(N-1)/N x bytes / bandwidth "
          f"+ 2(N-1) x latency; NVLink {NVLINK_BW / 1e9:.0f} GB/s per direction per GPU (H200: 900 GB/s total), "
          f"{NVLINK_LAT * 1e6:.0f} us per ring step; InfiniBand 400 Gb/s = {IB_BW / 1e9:.0f} GB/s per direction, one NIC "
          f"per GPU, {IB_LAT * 1e6:.0f} us per step; sustained {GPU_FLOPS / 1e12:.0f} TFLOP/s per GPU "
          f"(40% of H200's 989 dense bf16), training = {TRAIN_FLOPS_FACTOR} x forward FLOPs.")


if __name__ == "__main__":
    main()
