"""nanoGPT's shakespeare-char model in PyTorch (6 layers, 6 heads, 384 wide, context 256, vocab
65, dropout 0.2, biases, tied head, F.scaled_dot_product_attention), trained on random token
batches with nanoGPT's recipe (AdamW lr 1e-3, betas 0.9/0.99, wd 0.1, clip 1.0): tokens/s.
usage: gpt_char_torch.py --threads 2 --precision float32|bfloat16 --compile 0|1 --batch 8 --steps 10"""
import argparse, time
import torch
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--threads", type=int, default=2)
p.add_argument("--precision", default="float32")
p.add_argument("--compile", type=int, default=0)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--context", type=int, default=256)
a = p.parse_args()
torch.set_num_threads(a.threads)
L, H, D, V, T, DROP = 6, 6, 384, 65, a.context, 0.2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.drop = nn.Dropout(DROP)

    def forward(self, x):
        B, T_, _ = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(B, T_, H, D // H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=DROP if self.training else 0, is_causal=True)
        x = x + self.drop(self.c_proj(y.transpose(1, 2).contiguous().view(B, T_, D)))
        return x + self.drop(self.proj(F.gelu(self.fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        self.drop, self.blocks, self.ln_f = nn.Dropout(DROP), nn.ModuleList(Block() for _ in range(L)), nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, targets):
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(idx.shape[1])))
        for b in self.blocks:
            x = b(x)
        return F.cross_entropy(self.head(self.ln_f(x)).view(-1, V), targets.view(-1))


torch.manual_seed(1)
model = GPT()
for n_, p_ in model.named_parameters():     # nanoGPT's initialisation (Linear biases zero, as Kiln and Keras)
    if p_.dim() == 2:
        nn.init.normal_(p_, 0.0, 0.02 / (2 * L) ** 0.5 if n_.endswith(("c_proj.weight", "proj.weight")) else 0.02)
for m_ in model.modules():
    if isinstance(m_, nn.Linear) and m_.bias is not None:
        nn.init.zeros_(m_.bias)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.99), weight_decay=0.1)
step_model = torch.compile(model) if a.compile else model
x = torch.randint(0, V, (a.batch, T))
y = torch.randint(0, V, (a.batch, T))
bf16 = a.precision in ("bfloat16", "mixed_bfloat16")


def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = step_model(x, y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


for _ in range(2):
    step()
t0 = time.perf_counter()
for _ in range(a.steps):
    loss = step()
dt = time.perf_counter() - t0
print(f"torch {torch.__version__} gpt_char {a.precision} compile={a.compile} threads={a.threads} batch={a.batch} "
      f"context={T} loss={loss:.4f} params={sum(p_.numel() for p_ in model.parameters())} tokens_per_sec={a.steps * a.batch * T / dt:.1f}")
