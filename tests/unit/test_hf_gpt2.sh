#!/bin/bash
# The Hugging Face GPT-2 judge: make_gpt2.py (transformers, torch) writes a random GPT2LMHeadModel
# folder and its logits, greedy ids and one AdamW step; hf_gpt2_check compares Kiln's. Needs a
# Python with transformers and torch: $KILN_HF_PYTHON, else /work/venv-hf; skipped (77) without.
# usage: test_hf_gpt2.sh SOURCE_DIR CHECK_BINARY
src=$1 check=$2
py=${KILN_HF_PYTHON:-/work/venv-hf/bin/python}
if ! "$py" -c "import transformers, torch, safetensors" 2>/dev/null; then
    echo "SKIP: no Python with transformers, torch and safetensors ($py; set KILN_HF_PYTHON; PyPI needed to make one)"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/kiln_hf_gpt2.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$py" "$src/tests/data/hf/make_gpt2.py" "$dir" || { echo "FAIL: make_gpt2.py"; exit 1; }
"$check" "$dir"
