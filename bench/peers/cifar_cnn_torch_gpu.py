#!/usr/bin/env python3
"""PyTorch peer for `kiln bench` on the GPU: cifar_cnn (TF tutorial CNN) at batch 128 on synthetic
32x32x3 data, SGD momentum 0.9 lr 0.01, sparse softmax cross-entropy. Times one epoch of
--images images (default 50,000 = 390 full batches) in eager mode and with torch.compile, after
warm-up steps that are not timed (torch.compile's compilation happens there), and prints images/s.

  python3 bench/peers/cifar_cnn_torch_gpu.py                 # cuda: eager + compile
  python3 bench/peers/cifar_cnn_torch_gpu.py --device cpu    # the same on the CPU (eager)
  --modes eager,compile   --images N   --warmup N   --tf32 (allow TF32 in matmul; PyTorch's
  cuDNN convolutions use TF32 by default, as Kiln's do; --no-conv-tf32 turns that off, to compare
  with Kiln run with KILN_CUDA_TF32=0)

Last lines: RESULT mode=<eager|compile> device=<d> images_per_s=<x> epoch_s=<t> loss=<l> ... peak_mib=<m>
"""
import argparse, sys, time
import torch
import torch.nn as nn
from models import cifar_cnn


def run(mode, args, dev):
    torch.manual_seed(1)
    model = cifar_cnn().to(dev)
    if args.channels_last and dev.type == "cuda":
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    bs = args.batch
    # synthetic data resident on the device (like Kiln's synthetic bench): a few distinct batches
    nb = 8
    xs = torch.rand(nb, bs, 3, 32, 32, device=dev)
    if args.channels_last and dev.type == "cuda":
        xs = torch.stack([x.contiguous(memory_format=torch.channels_last) for x in xs])
    ys = torch.randint(0, 10, (nb, bs), device=dev)

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = step
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    if mode == "compile":
        fn = torch.compile(step)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    t0 = time.perf_counter()
    for i in range(args.warmup):
        loss = fn(xs[i % nb], ys[i % nb])
    sync()
    warm = time.perf_counter() - t0
    steps = args.images // bs
    t0 = time.perf_counter()
    for i in range(steps):
        loss = fn(xs[i % nb], ys[i % nb])
    sync()
    dt = time.perf_counter() - t0
    ips = steps * bs / dt
    # peak of PyTorch's caching allocator (tensors incl. the data set on the device); kiln bench's
    # gpu "train MiB" is the same kind of figure for Kiln's allocator
    peak = torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else 0.0
    print(f"RESULT mode={mode} device={dev.type} images_per_s={ips:.0f} epoch_s={dt * args.images / (steps * bs):.3f} "
          f"loss={loss.item():.4f} warmup_s={warm:.1f} peak_mib={peak:.1f}", flush=True)
    return ips


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--modes", default=None, help="comma list of eager,compile (default: both on cuda, eager on cpu)")
    p.add_argument("--images", type=int, default=50000)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--tf32", action="store_true", help="allow TF32 for matmuls")
    p.add_argument("--no-conv-tf32", action="store_true", help="disable cuDNN TF32 convolutions (as Kiln with KILN_CUDA_TF32=0)")
    p.add_argument("--channels-last", action="store_true", help="NHWC tensors (Kiln's layout)")
    args = p.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("RESULT error=no_cuda", flush=True)
        return 1
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = not args.no_conv_tf32
    torch.backends.cudnn.benchmark = True
    dev = torch.device(args.device)
    modes = (args.modes or ("eager,compile" if args.device == "cuda" else "eager")).split(",")
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu"
    print(f"torch {torch.__version__} on {name}; cifar_cnn batch {args.batch}, {args.images} images/epoch, "
          f"matmul tf32={args.tf32} conv tf32={not args.no_conv_tf32}", flush=True)
    for m in modes:
        try:
            run(m.strip(), args, dev)
        except Exception as e:  # torch.compile may be unavailable (no compiler); report, go on
            print(f"RESULT mode={m.strip()} device={dev.type} error={type(e).__name__}: {str(e)[:200]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
