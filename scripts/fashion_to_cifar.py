#!/usr/bin/env python3
"""Writes Fashion-MNIST as CIFAR-10 binary batches, for trying CIFAR models without CIFAR-10.

Each 28x28 grey image is centred in a 32x32 field (2 pixels of black around it) and copied to the
three colour planes; records are CIFAR-10's: 1 label byte, then 1024 red, 1024 green, 1024 blue
bytes. The 60,000 training images go to data_batch_1..5.bin (12,000 each), the first TEST_COUNT
test images to test_batch.bin. Standard library only.

  scripts/fashion_to_cifar.py [SRC_DIR] [OUT_DIR] [TEST_COUNT]
  (defaults: /usr/share/datasets/fashion-mnist, fashion-cifar, 10000)
  kiln train --model resnet20 --data cifar10:fashion-cifar
"""
import gzip, os, struct, sys


def idx(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
    return dims, data[4 + 4 * len(dims):]


def find(src, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(src, name)):
            return os.path.join(src, name)
    sys.exit(f"fashion_to_cifar: {stem}[.gz] not found in {src}")


def records(src, split, limit):
    (n, h, w), px = idx(find(src, f"{split}-images-idx3-ubyte"))
    (m,), labels = idx(find(src, f"{split}-labels-idx1-ubyte"))
    if (h, w) != (28, 28) or n != m:
        sys.exit(f"fashion_to_cifar: {split}: expected 28x28 images with one label each, got {n}x{h}x{w} and {m} labels")
    for i in range(min(n, limit)):
        img = px[i * 784:(i + 1) * 784]
        plane = bytearray(1024)
        for r in range(28):
            plane[(r + 2) * 32 + 2:(r + 2) * 32 + 30] = img[r * 28:(r + 1) * 28]
        yield bytes([labels[i]]) + bytes(plane) * 3


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist"
    out = sys.argv[2] if len(sys.argv) > 2 else "fashion-cifar"
    test_count = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    os.makedirs(out, exist_ok=True)
    train = list(records(src, "train", 60000))
    per = (len(train) + 4) // 5
    for b in range(5):
        with open(os.path.join(out, f"data_batch_{b + 1}.bin"), "wb") as f:
            f.write(b"".join(train[b * per:(b + 1) * per]))
    test = list(records(src, "t10k", test_count))
    with open(os.path.join(out, "test_batch.bin"), "wb") as f:
        f.write(b"".join(test))
    print(f"{out}: {len(train)} training and {len(test)} test records in CIFAR-10 binary format")


if __name__ == "__main__":
    main()
