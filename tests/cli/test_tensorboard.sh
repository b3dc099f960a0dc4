#!/usr/bin/env bash
# kiln train --tensorboard read back by TensorBoard itself (the tensorboard package from PyPI, in the
# venv scripts/pyenv.sh makes): the tags and values must equal the history CSV's. Exit 77 (skipped)
# when PyPI cannot be reached. Usage: test_tensorboard.sh path/to/kiln path/to/source-root
set -u
K=${1:?usage: test_tensorboard.sh path/to/kiln path/to/source-root}
SRC=${2:?usage: test_tensorboard.sh path/to/kiln path/to/source-root}
py=$(bash "$SRC/scripts/pyenv.sh" tensorboard tensorboard) || exit 77
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$SRC/tests/data/make_binary_csv.py" -o "$tmp/train.csv" --test "$tmp/test.csv" --rows 640 || exit 1
# 640 rows, batch 32: 20 steps per epoch; batch scalars every 7 steps
"$K" train --model mlp --data csv:"$tmp/train.csv" --test-csv "$tmp/test.csv" --loss binary_crossentropy --epochs 4 --batch-size 32 \
    --schedule cosine --lr 0.01 --threads 1 --verbose 0 --history "$tmp/h.csv" --tensorboard "$tmp/logs" --tensorboard-every 7 || exit 1
"$py" "$SRC/tests/cli/check_tensorboard.py" "$tmp/logs" "$tmp/h.csv" 7 20
