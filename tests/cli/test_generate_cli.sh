#!/usr/bin/env bash
# kiln generate --prompt TEXT, kiln tokenize --model-file, kiln export to a folder: the errors
# (the text paths themselves are judged against transformers in test_hf_gpt2 and in
# test_generate_text): a prompt without a tokenizer for a vocabulary that is not bytes, a prompt
# whose tokens fall outside the model's vocabulary, both or neither prompt form, a folder without
# config.json, --tokenizer for an output that is not a folder.
#   test_generate_cli.sh path/to/kiln
set -u
K=${1:?usage: test_generate_cli.sh path/to/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {      # expect RC PATTERN -- command...: the exit status and a line of stderr
    local rc=$1 pat=$2; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err"
    local got=$?
    if [ "$got" != "$rc" ] || ! grep -q -- "$pat" "$tmp/err"; then
        echo "FAIL: $* -> $got (want $rc, stderr matching '$pat'):"; cat "$tmp/err"; fails=$((fails + 1))
    else echo "ok: $(grep -m1 -- "$pat" "$tmp/err")"; fi
}
printf 'the quick brown fox jumps over the lazy dog\nthe dog naps\n' >"$tmp/t.txt"
"$K" tokenizer train --vocab-size 270 "$tmp/t.txt" -o "$tmp/tok.json" >/dev/null || { echo "FAIL: tokenizer train"; exit 1; }
expect 1 "vocabulary of 65 tokens, not the 256 bytes, and no tokenizer" -- "$K" generate --model gpt_char --prompt "hi" --tokens 2
expect 1 "outside model 'gpt_char''s vocabulary of 65" -- "$K" generate --model gpt_char --tokenizer "$tmp/tok.json" --prompt "the quick" --tokens 2
expect 2 "one of them" -- "$K" generate --model gpt_char --prompt "hi" --prompt-ids 1,2
expect 2 "one of them" -- "$K" generate --model gpt_char
expect 1 "tokenizer" -- "$K" generate --model gpt_char --tokenizer "$tmp/missing.json" --prompt "hi"
expect 2 "not a Hugging Face folder" -- "$K" tokenize --model-file "$tmp" --text "hi"
expect 2 "give --tokenizer FILE" -- "$K" tokenize --tokenizer "$tmp/tok.json" --model-file "$tmp" --text "hi"
mkdir "$tmp/hf" && echo '{"model_type": "gpt2"}' >"$tmp/hf/config.json"
expect 2 "is for a Hugging Face folder output" -- "$K" export --model-file "$tmp/hf" --output "$tmp/m.onnx" --tokenizer "$tmp/tok.json"
expect 1 "n_layer" -- "$K" export --model-file "$tmp/hf" --output "$tmp/out/"
expect 1 "n_layer" -- "$K" generate --model-file "$tmp/hf" --prompt "hi"
[ "$fails" = 0 ] && echo "PASS" || { echo "$fails failed"; exit 1; }
