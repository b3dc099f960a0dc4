#!/usr/bin/env bash
# kiln train / eval --data text:FILE --block-size N (issue 27): a small gpt_char trains on a text
# (loss, perplexity and val_perplexity per epoch, in the history CSV too), the same --seed gives the
# same run, the checkpoint evaluates on the held-out tail (also from the data it records) and generates
# with kiln generate --load (--prompt-ids, and --prompt on bytes);
# a tokenizer's ids train too. Errors: a missing file, a block size larger than the text, no
# --block-size, --block-size without text data, a data vocabulary larger than the model's.
# Usage: test_text_train.sh path/to/kiln
set -u -o pipefail
K=${1:?usage: test_text_train.sh path/to/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$(dirname "$0")/lib.sh"
for i in $(seq 1 60); do echo "the cat sat on the mat $i times; the dog ran."; done >"$tmp/t.txt"   # ~2.8 KB
common=(--model gpt_char --data "text:$tmp/t.txt" --block-size 8 --batch-size 4 --steps-per-epoch 2 --threads 1 --verbose 2)
out=$("$K" train "${common[@]}" --epochs 2 --seed 5 --save "$tmp/g.safetensors" --history "$tmp/h.csv" 2>&1)
grep -qE "Validation loss: [0-9.]+, perplexity [0-9.]+" <<<"$out" && ok || bad "train: $out"
out1=$(grep "Epoch 1/2" <<<"$out")
out2=$("$K" train "${common[@]}" --epochs 1 --seed 5 2>&1 | grep "Epoch 1/1")   # the same windows, the same weights
grep -q "perplexity: [0-9.]* .*val_perplexity: [0-9.]*" <<<"$out1" && ok || bad "progress line: $out1"
l1=${out1#*- loss:} l2=${out2#*- loss:}
[ -n "$out1" ] && [ "${l1% - *tokens/s}" = "${l2% - *tokens/s}" ] && ok || bad "same --seed, other run: $out1 / $out2"
# tokens per second: 4 windows of 8 tokens a step
grep -qE " - [0-9]+ tokens/s$" <<<"$out1" && ok || bad "progress line counts tokens: $out1"
head -1 "$tmp/h.csv" | grep -q "perplexity,val_perplexity" && ok || bad "history header: $(head -1 "$tmp/h.csv")"
# perplexity = exp(loss) in every row
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { p = exp($c["val_loss"]); d = p - $c["val_perplexity"]; if (d < 0) d = -d; if (d > 1e-3 * p) bad++; n++ }
         END { exit bad || n != 2 }' "$tmp/h.csv" && ok || bad "val_perplexity is not exp(val_loss): $(cat "$tmp/h.csv")"
vloss=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } END { printf "%.4f", $c["val_loss"] }' "$tmp/h.csv")
expect "eval" "held-out .* loss $vloss, perplexity [0-9.]+, [0-9]+ windows" "$K" eval --load "$tmp/g.safetensors" --data "text:$tmp/t.txt" --block-size 8
out=$("$K" eval --load "$tmp/g.safetensors" 2>&1)   # the data the checkpoint records
grep -q "Data: text:.* --block-size 8 (what" <<<"$out" && grep -q "held-out .* loss $vloss," <<<"$out" && ok || bad "eval from the recorded data: $out"
expect "generate --load" "^116,104,(([0-9]+),){5}[0-9]+$" "$K" generate --load "$tmp/g.safetensors" --prompt-ids 116,104 --tokens 6 --temperature 0
expect "generate --prompt (bytes)" "^th" "$K" generate --load "$tmp/g.safetensors" --prompt th --tokens 6 --temperature 0
# a tokenizer's ids: gpt_char takes its vocabulary
if "$K" tokenizer train --vocab-size 300 "$tmp/t.txt" -o "$tmp/tok.json" >/dev/null 2>&1; then
  expect "train --tokenizer" "vocabulary 300" "$K" train "${common[@]}" --epochs 1 --tokenizer "$tmp/tok.json" --save "$tmp/tk.safetensors"
  # the checkpoint carries the tokenizer: generate and eval need no --tokenizer, and give what they give with it
  with=$("$K" generate --load "$tmp/tk.safetensors" --tokenizer "$tmp/tok.json" --prompt "the cat" --tokens 5 --temperature 0 2>/dev/null)
  without=$("$K" generate --load "$tmp/tk.safetensors" --prompt "the cat" --tokens 5 --temperature 0 2>/dev/null)
  [[ "$with" == "the cat"* ]] && [ "$with" = "$without" ] && ok || bad "generate from the stored tokenizer: '$without' vs --tokenizer: '$with'"
  ids=$("$K" generate --load "$tmp/tk.safetensors" --prompt "the cat" --tokens 5 --temperature 0 --print-ids 2>/dev/null)
  grep -qE "^[0-9]+(,[0-9]+)+$" <<<"$ids" && awk -F, '{ for (i = 1; i <= NF; i++) if ($i > 255) big = 1 } END { exit !big }' <<<"$ids" && ok ||
    bad "generate --print-ids uses the BPE ids (some above 255): $ids"
  expect "eval: the stored tokenizer reads --data" "held-out .* loss [0-9.]+" "$K" eval --load "$tmp/tk.safetensors" --data "text:$tmp/t.txt" --block-size 8
  expect_fail "eval: the data's vocabulary larger than the model's" "vocabulary of 300 .* one of 256" \
    "$K" eval --load "$tmp/g.safetensors" --data "text:$tmp/t.txt" --block-size 8 --tokenizer "$tmp/tok.json"
else bad "kiln tokenizer train"; fi
expect_fail "missing file" "missing.txt" "$K" train "${common[@]}" --data "text:$tmp/missing.txt"
expect_fail "block size larger than the text" "too few for block size 4000" "$K" train --model gpt_char --data "text:$tmp/t.txt" --block-size 4000
expect_fail "no --block-size" "needs --block-size N" "$K" train --model gpt_char --data "text:$tmp/t.txt"
expect_fail "--block-size without text" "goes with --data text:FILE" "$K" train --model mlp --data synthetic --block-size 8
echo "test_text_train: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
