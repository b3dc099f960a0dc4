"""A small random GPT2LMHeadModel (vocabulary 300) with a byte-level BPE tokenizer.json trained by
`tokenizers` on a short text, saved together as a Hugging Face folder (tests/unit/test_hf_gpt2.sh).
  make_gpt2_text.py make OUT_DIR        writes OUT_DIR (config.json, model.safetensors, tokenizer.json)
  make_gpt2_text.py generate DIR PROMPT N   loads DIR with transformers' AutoTokenizer and
      GPT2LMHeadModel and prints the greedy text (prompt and N new tokens, decoded)"""
import sys
import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

TEXT = ["The quick brown fox jumps over the lazy dog.\n", "A fox, a dog and the quick brown hen.\n",
        "Kiln trains transformers in C; the dog naps.\n"] * 4

if sys.argv[1] == "make":
    out = sys.argv[2]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(TEXT, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    torch.manual_seed(1)
    cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=32, vocab_size=300, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=0, eos_token_id=0)
    m = GPT2LMHeadModel(cfg)
    with torch.no_grad():      # spread the logits (GPT-2's N(0, 0.02) gives near ties)
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.15)
        w = m.transformer.wte.weight       # rows of one norm: no token wins every step
        w.copy_(w / w.norm(dim=1, keepdim=True) * 4)
    m.save_pretrained(out, safe_serialization=True)
    tok.save(out + "/tokenizer.json")
else:
    d, prompt, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
    tok = AutoTokenizer.from_pretrained(d)
    m = GPT2LMHeadModel.from_pretrained(d).eval()
    ids = torch.tensor([tok(prompt)["input_ids"]])
    g = m.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=0, eos_token_id=None,
                   attention_mask=torch.ones_like(ids))
    sys.stdout.buffer.write((tok.decode(g[0].tolist(), clean_up_tokenization_spaces=False) + "\n").encode("utf-8"))
    sys.stderr.write("prompt ids: %s\n" % ",".join(map(str, ids[0].tolist())))
    sys.stderr.write("transformers ids: %s\n" % ",".join(map(str, g[0].tolist())))
