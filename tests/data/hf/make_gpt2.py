"""A randomly initialised small GPT2LMHeadModel (transformers) saved with save_pretrained, and what
Kiln must reproduce from that folder (tests/unit/test_hf_gpt2.sh, hf_gpt2_check.c):
  logits.txt  the logits of ids.txt (16 ids, the full context), row-major [16, 50]
  gen.txt     greedy generation: the 4-id prompt and 10 new ids (model.generate, do_sample=False)
  seq.txt     17 ids: one AdamW step on inputs seq[:16], next-token labels seq[1:] (mean
              cross-entropy), lr 1e-2, betas (0.9, 0.999), eps 1e-8, weight decay 0.1, no clipping
  after.safetensors  the weights after that step (Hugging Face names); loss.txt its loss
usage: make_gpt2.py OUT_DIR"""
import sys
import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from transformers import GPT2Config, GPT2LMHeadModel

out = sys.argv[1]
torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, n_positions=16, vocab_size=50, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                 bos_token_id=0, eos_token_id=0)
m = GPT2LMHeadModel(cfg)
with torch.no_grad():          # GPT-2's N(0, 0.02) gives near-uniform logits: spread them
    for p in m.parameters():
        p.add_(torch.randn_like(p) * 0.2)
m.eval()
m.save_pretrained(out + "/model", safe_serialization=True)

ids = torch.tensor([[(i * 7 + 3) % 50 for i in range(16)]])
with torch.no_grad():
    logits = m(ids).logits[0]
np.savetxt(out + "/ids.txt", ids[0].numpy()[None], fmt="%d", delimiter=",")
np.savetxt(out + "/logits.txt", logits.numpy().reshape(-1), fmt="%.9g")
g = m.generate(ids[:, :4], max_new_tokens=10, do_sample=False, pad_token_id=0, attention_mask=torch.ones(1, 4, dtype=torch.long))
np.savetxt(out + "/gen.txt", g[0].numpy()[None], fmt="%d", delimiter=",")

seq = torch.tensor([[(i * 5 + 1) % 50 for i in range(17)]])
np.savetxt(out + "/seq.txt", seq[0].numpy()[None], fmt="%d", delimiter=",")
m.train()
opt = torch.optim.AdamW(m.parameters(), lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
loss = F.cross_entropy(m(seq[:, :16]).logits.reshape(-1, 50), seq[0, 1:])
loss.backward()
opt.step()
np.savetxt(out + "/loss.txt", [loss.item()], fmt="%.9g")
sd = {k: v.detach().contiguous() for k, v in m.state_dict().items() if not k.startswith("lm_head") and not k.endswith((".attn.bias", ".attn.masked_bias"))}
save_file(sd, out + "/after.safetensors")
