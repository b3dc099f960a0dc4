#!/usr/bin/env python3
"""PyTorch peer for bench/compare_torch_cpu.sh: the same models, batch, optimizer and thread count
as Kiln, on the CPU.

  fashion_cnn: real Fashion-MNIST (IDX .gz), Adam 1e-3, batch 64, N epochs: training images/s
               (training loop only), inference images/s (test set), test accuracy.
  cifar_cnn:   synthetic 32x32x3, SGD momentum 0.9 lr 0.01, batch 128: training images/s over
               --steps steps after 3 warm-up steps, inference images/s.
--channels-last 1 keeps activations NHWC (oneDNN's preferred layout); --compile 1 runs
torch.compile (inductor) on the model where the installed PyTorch has it. --precision
mixed_bfloat16 (or bf16) runs forward and loss under torch.autocast("cpu", torch.bfloat16), as
Kiln's and Keras' mixed_bfloat16 policy (f32 weights and optimizer).
Prints one line: RESULT key=value ...
"""
import argparse, contextlib, os, time
import numpy as np
import torch
import torch.nn as nn
from models import cifar_cnn, fashion_cnn
from idx import read_idx


def keras_init(model):
    # Keras defaults (glorot_uniform kernels, zero biases) so both sides start alike
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)


def prepare(model, a):
    """channels_last and torch.compile as asked; returns (model, input converter)."""
    conv = (lambda t: t)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
        conv = (lambda t: t.contiguous(memory_format=torch.channels_last))
    if a.compile:
        model = torch.compile(model)
    return model, conv


def autocast(a):
    if a.precision in ("float32", "f32"):
        return contextlib.nullcontext()
    return torch.autocast("cpu", dtype=torch.bfloat16)


def infer_ips(model, x, batch, a):
    model.eval()
    with torch.no_grad(), autocast(a):
        model(x[:batch])
        t = time.perf_counter()
        for i in range(0, len(x), batch):
            model(x[i:i + batch])
        return len(x) / (time.perf_counter() - t)


def tag(a):
    return f" version={torch.__version__} channels_last={a.channels_last} compile={a.compile} precision={a.precision}"


def run_fashion(a):
    d = a.data
    xtr = torch.from_numpy(read_idx(os.path.join(d, "train-images-idx3-ubyte.gz")).astype(np.float32) / 255.0).unsqueeze(1)
    ytr = torch.from_numpy(read_idx(os.path.join(d, "train-labels-idx1-ubyte.gz")).astype(np.int64))
    xte = torch.from_numpy(read_idx(os.path.join(d, "t10k-images-idx3-ubyte.gz")).astype(np.float32) / 255.0).unsqueeze(1)
    yte = torch.from_numpy(read_idx(os.path.join(d, "t10k-labels-idx1-ubyte.gz")).astype(np.int64))
    model = fashion_cnn()
    keras_init(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
    model, conv = prepare(model, a)
    xtr, xte = conv(xtr), conv(xte)
    lossf = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(a.seed)
    train_time, images = 0.0, 0
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(len(xtr), generator=g)
        n = len(xtr) // a.batch * a.batch          # full batches, as Kiln's fit
        t = time.perf_counter()
        for i in range(0, n, a.batch):
            idx = perm[i:i + a.batch]
            opt.zero_grad(set_to_none=True)
            with autocast(a):
                loss = lossf(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        train_time += time.perf_counter() - t
        images += n
    model.eval()
    with torch.no_grad(), autocast(a):
        correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item() for i in range(0, len(xte), 1000))
    print(f"RESULT peer=torch{tag(a)} model=fashion_cnn train_ips={images / train_time:.1f} "
          f"infer_ips={infer_ips(model, xte, a.batch, a):.1f} test_acc={100.0 * correct / len(xte):.2f}", flush=True)


def run_cifar(a):
    torch.manual_seed(a.seed)
    model = cifar_cnn()
    keras_init(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = nn.CrossEntropyLoss()
    model, conv = prepare(model, a)
    x = conv(torch.rand(a.batch * 4, 3, 32, 32))
    y = torch.randint(0, 10, (a.batch * 4,))
    model.train()

    def step(i):
        j = (i % 4) * a.batch
        opt.zero_grad(set_to_none=True)
        with autocast(a):
            loss = lossf(model(x[j:j + a.batch]), y[j:j + a.batch])
        loss.backward()
        opt.step()

    for i in range(3):
        step(i)
    t = time.perf_counter()
    for i in range(a.steps):
        step(i)
    ips = a.steps * a.batch / (time.perf_counter() - t)
    print(f"RESULT peer=torch{tag(a)} model=cifar_cnn train_ips={ips:.1f} infer_ips={infer_ips(model, x, a.batch, a):.1f}", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="fashion_cnn")
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--channels-last", type=int, default=0)
    p.add_argument("--compile", type=int, default=0)
    p.add_argument("--precision", default="float32",
                   choices=["float32", "f32", "mixed_bfloat16", "bf16"])   # no CPU float16 autocast here
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    run_fashion(a) if a.model == "fashion_cnn" else run_cifar(a)
