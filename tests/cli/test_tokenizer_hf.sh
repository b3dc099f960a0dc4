#!/usr/bin/env bash
# Kiln's tokenizer against Hugging Face `tokenizers` (from PyPI through scripts/pyenv.sh; exit 77 =
# skipped when PyPI cannot be reached): (1) a GPT-2 style byte-level BPE trained and saved by
# `tokenizers` gives `kiln tokenize` exactly its ids on a multi-language text (whitespace runs,
# digits, punctuation, emoji, contractions, <|endoftext|>), with merges saved as [a, b] pairs and
# as "a b" strings, with and without add_prefix_space, and decodes back to its text; (2) `kiln
# tokenizer train` learns the same vocabulary and merges as `tokenizers`' BpeTrainer, and its
# tokenizer.json loads in `tokenizers` with the same ids as Kiln's.
# Usage: test_tokenizer_hf.sh path/to/kiln SOURCE_DIR
set -u -o pipefail
K=${1:?usage: test_tokenizer_hf.sh path/to/kiln SOURCE_DIR}
S=${2:?usage: test_tokenizer_hf.sh path/to/kiln SOURCE_DIR}
PY=$(bash "$S/scripts/pyenv.sh" tokenizers tokenizers) || exit 77
tmp=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "$tmp" || trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
"$PY" - <<'PY' || exit 1
import json, random
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers
random.seed(27)
parts = ["Hello world! ", "\u00c7a va? Tr\u00e8s bien.  ", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001",
         "\u041f\u0440\u0438\u0432\u0435\u0442,   \u043c\u0438\u0440!\n", "12345 67.89 3,000,000 ", "emoji \U0001F600\U0001F389\U0001F44D\U0001F3FD ",
         "tabs\t\tand\n\n\nnewlines   \n", "don't we'll they're I'm 'S 'LL ", "\ufb01 ligature \u00bd \u00b2 ",
         "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 ", "\u0928\u092e\u0938\u094d\u0924\u0947 ",
         "   leading", "xxxxxxxxxxxxxxxxxxxx ", "a\u00a0b\u3000c\u2003d ", "\u0661\u0662\u0663 \u2165 ", "\r\n", "$$$ %%% ^^^ ",
         "<|endoftext|>", "ZWJ \U0001F468\u200d\U0001F469\u200d\U0001F467 ", "\u1100\u1161 \uac00 ", "\U00010400\U00010401 "]
letters = "etaoinshrdlucmfwyp" * 3 + "\u00e9\u00fc\u00df\u0430\u0431\u0432\u03b1\u03b2\u3042\u3044\u4e00\u4e8c0123456789"
def piece():   # a fixed phrase, or a random word (so that training does not run out of pairs)
    if random.random() < 0.5:
        return random.choice(parts)
    return random.choice(["", " ", "  ", "\t", "'"]) + "".join(random.choice(letters) for _ in range(random.randint(1, 7)))
def text(n, seed):
    random.seed(seed)
    return "".join("".join(piece() for _ in range(random.randint(1, 10))) + "\n" for _ in range(n))
open("train.txt", "w", encoding="utf-8", newline="").write(text(2000, 1))
open("test.txt", "w", encoding="utf-8", newline="").write(text(300, 2) + "unseen: \u00fe\u00f0 \u10d0\u10d1 \U0001F9EA   end")
for prefix in (False, True):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>"], show_progress=False,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(["train.txt"], tr)
    name = "hf_prefix" if prefix else "hf"
    tok.save(name + ".json")
    j = json.load(open(name + ".json", encoding="utf-8"))     # the same merges as "a b" strings
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
    json.dump(j, open(name + "_str.json", "w", encoding="utf-8"), ensure_ascii=False)
    ids = tok.encode(open("test.txt", encoding="utf-8", newline="").read()).ids
    open(name + ".ids", "w").write(",".join(map(str, ids)) + "\n")
    if not prefix:
        open("hf.decoded", "w", encoding="utf-8", newline="").write(tok.decode(ids, skip_special_tokens=False) + "\n")
PY
fail=0
for name in hf hf_prefix; do
  for f in $name.json ${name}_str.json; do
    "$K" tokenize --tokenizer "$f" --print-ids test.txt > kiln.ids 2>err || { echo "FAIL: kiln tokenize --tokenizer $f: $(cat err)"; fail=1; continue; }
    if cmp -s kiln.ids $name.ids; then echo "ok: $f: $(tr , '\n' < kiln.ids | wc -l) ids, the same as tokenizers'"
    else echo "FAIL: $f: Kiln's ids differ from tokenizers': $(cmp kiln.ids $name.ids)"; fail=1; fi
  done
done
"$K" tokenize --tokenizer hf.json --decode-ids "$(cat hf.ids)" > kiln.decoded 2>err || { echo "FAIL: --decode-ids: $(cat err)"; fail=1; }
cmp -s kiln.decoded hf.decoded && echo "ok: decode gives tokenizers' text" || { echo "FAIL: decoded text differs: $(cmp kiln.decoded hf.decoded)"; fail=1; }
"$K" tokenizer train --vocab-size 700 train.txt -o kiln.json > /dev/null 2>err || { echo "FAIL: kiln tokenizer train: $(cat err)"; exit 1; }
"$K" tokenize --tokenizer kiln.json --print-ids test.txt > kiln_own.ids || fail=1
"$PY" - <<'PY' || fail=1
import json, sys
from tokenizers import Tokenizer
ours, theirs = json.load(open("kiln.json", encoding="utf-8")), json.load(open("hf.json", encoding="utf-8"))
flat = lambda ms: [" ".join(m) if isinstance(m, list) else m for m in ms]
bad = 0
if ours["model"]["vocab"] != theirs["model"]["vocab"]:
    print("FAIL: kiln tokenizer train: the vocabulary differs from BpeTrainer's"); bad = 1
if flat(ours["model"]["merges"]) != flat(theirs["model"]["merges"]):
    a, b = flat(ours["model"]["merges"]), flat(theirs["model"]["merges"])
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    print("FAIL: kiln tokenizer train: merge %d differs: %r vs BpeTrainer's %r" % (i, a[i:i+1], b[i:i+1])); bad = 1
tok = Tokenizer.from_file("kiln.json")
ids = ",".join(map(str, tok.encode(open("test.txt", encoding="utf-8", newline="").read()).ids)) + "\n"
if ids != open("kiln_own.ids").read():
    print("FAIL: tokenizers encodes with Kiln's tokenizer.json to other ids than Kiln"); bad = 1
else:
    print("ok: Kiln's tokenizer.json: %d merges, the same as BpeTrainer's; tokenizers gives Kiln's ids" % len(ours["model"]["merges"]))
sys.exit(bad)
PY
exit $fail
