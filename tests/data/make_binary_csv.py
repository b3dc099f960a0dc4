#!/usr/bin/env python3
"""Writes a small binary-classification CSV (standard library only), for

    kiln train --model mlp --data csv:train.csv --loss binary_crossentropy

Columns f1..f4 are uniform in [-1, 1]; label is 1 when the point (f1, f2) lies inside the circle
of radius 0.7 (f3 and f4 are noise), so a hidden layer is needed: Keras' seed example
Sequential([Dense(10, relu), Dense(1, sigmoid)]) learns it to about 95%. Same seed, same file.

usage: make_binary_csv.py [-o train.csv] [--test test.csv] [--rows 1000] [--seed 1]
"""
import argparse
import random


def rows(n, rng):
    for _ in range(n):
        f = [rng.uniform(-1, 1) for _ in range(4)]
        yield f, 1 if f[0] * f[0] + f[1] * f[1] < 0.49 else 0


def write(path, n, rng):
    with open(path, "w") as out:
        out.write("f1,f2,f3,f4,label\n")
        for f, label in rows(n, rng):
            out.write(",".join(f"{v:.5f}" for v in f) + f",{label}\n")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-o", "--out", default="train.csv", help="the training CSV (default train.csv)")
    p.add_argument("--test", help="also write this many rows / 4 of test rows here")
    p.add_argument("--rows", type=int, default=1000, help="training rows (default 1000)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    rng = random.Random(a.seed)
    write(a.out, a.rows, rng)
    if a.test:
        write(a.test, max(1, a.rows // 4), rng)


if __name__ == "__main__":
    main()
