#!/usr/bin/env bash
# Training tokens/s of gpt_char (nanoGPT shakespeare-char: 6x384, context 256) on the CPU: Kiln
# (build/bench_gpt_char) against PyTorch (bench/peers/gpt_char_torch.py: scaled_dot_product_attention,
# eager and torch.compile) and Keras 3 on TensorFlow (bench/peers/gpt_char_keras.py: MultiHeadAttention,
# train_on_batch, without and with XLA jit_compile), float32 and bf16 (Kiln and Keras mixed_bfloat16,
# PyTorch autocast), same batch, recipe (AdamW, clip 1.0) and thread count, in one run. Each line
# gives its model's parameter count (params=, 10,770,816 for vocabulary 65) to show the models match.
# Usage: bench/gpt_char.sh [threads=2] [batch=8] [steps=10]
#   (needs cmake --build build --target bench_gpt_char, and a Python with torch and tensorflow
#   (Keras 3): $PY, default /root/.cache/kiln/venv-peers/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2} B=${2:-8} S=${3:-10}
PY=${PY:-/root/.cache/kiln/venv-peers/bin/python}
for prec in float32 mixed_bfloat16; do
    build/bench_gpt_char "$T" "$prec" "$B" "$S"
    for c in 0 1; do
        "$PY" bench/peers/gpt_char_torch.py --threads "$T" --precision "$prec" --compile "$c" --batch "$B" --steps "$S" 2>/dev/null \
            || echo "torch gpt_char $prec compile=$c: failed"
        "$PY" bench/peers/gpt_char_keras.py --threads "$T" --precision "$prec" --jit "$c" --batch "$B" --steps "$S" 2>/dev/null \
            || echo "keras gpt_char $prec jit=$c: failed"
    done
done
