#!/bin/bash
# The Hugging Face GPT-2 judge: make_gpt2.py (transformers, torch) writes a random GPT2LMHeadModel
# folder and its logits, greedy ids and one AdamW step; hf_gpt2_check compares Kiln's. Needs a
# Python with transformers and torch: $KILN_HF_PYTHON, else /work/venv-hf; skipped (77) without.
# Then text: make_gpt2_text.py writes a GPT-2 folder with a tokenizer.json (tokenizers' BPE);
# `kiln generate --prompt TEXT` reads both and saves the folder back (--save-hf), and transformers
# (AutoTokenizer, GPT2LMHeadModel) loading Kiln's folder must give the same greedy text.
# usage: test_hf_gpt2.sh SOURCE_DIR CHECK_BINARY KILN
src=$1 check=$2 kiln=$3
py=${KILN_HF_PYTHON:-/work/venv-hf/bin/python}
if ! "$py" -c "import transformers, torch, safetensors" 2>/dev/null; then
    echo "SKIP: no Python with transformers, torch and safetensors ($py; set KILN_HF_PYTHON; PyPI needed to make one)"
    exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/kiln_hf_gpt2.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
"$py" "$src/tests/data/hf/make_gpt2.py" "$dir" || { echo "FAIL: make_gpt2.py"; exit 1; }
"$check" "$dir" || exit 1
"$py" "$src/tests/data/hf/make_gpt2_text.py" make "$dir/text" 2>"$dir/log" || { cat "$dir/log"; echo "FAIL: make_gpt2_text.py"; exit 1; }
prompt="The quick brown"
"$kiln" generate --model-file "$dir/text" --prompt "$prompt" --tokens 12 --temperature 0 --save-hf "$dir/kiln_text" >"$dir/kiln.txt" 2>"$dir/log" ||
    { cat "$dir/log"; echo "FAIL: kiln generate --prompt"; exit 1; }
[ -f "$dir/kiln_text/tokenizer.json" ] || { echo "FAIL: kiln generate --save-hf wrote no tokenizer.json"; exit 1; }
"$py" "$src/tests/data/hf/make_gpt2_text.py" generate "$dir/kiln_text" "$prompt" 12 >"$dir/hf.txt" 2>"$dir/log" ||
    { cat "$dir/log"; echo "FAIL: transformers could not generate from Kiln's folder"; exit 1; }
echo "Kiln:         $(cat "$dir/kiln.txt")"
echo "transformers: $(cat "$dir/hf.txt") (from Kiln's folder with its tokenizer.json)"
cmp -s "$dir/kiln.txt" "$dir/hf.txt" || { echo "FAIL: greedy text from the prompt differs"; exit 1; }
ids=$("$kiln" tokenize --model-file "$dir/kiln_text" --text "$prompt") || { echo "FAIL: kiln tokenize --model-file"; exit 1; }
grep -qx "prompt ids: $ids" "$dir/log" || { echo "FAIL: kiln tokenize --model-file gives $ids, transformers: $(grep 'prompt ids' "$dir/log")"; exit 1; }
echo "PASS: the same greedy text from a text prompt"
