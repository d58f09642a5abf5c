"""A small GPT in plain PyTorch for the strata.torch tests: token and learned position
embeddings, pre-LN blocks (causal self-attention, GELU MLP), a final LayerNorm and a head tied
to the token embedding (lm_head.weight is wte.weight), as GPT-2."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, d, n_head, block):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)
        mask = torch.triu(torch.ones(block, block, dtype=torch.bool), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.n_head)
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, d, n_head, block):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, n_head, block)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, vocab, d, n_layer, n_head, block):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(block, d)
        self.h = nn.ModuleList(Block(d, n_head, block) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1])
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def loss_of(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def train_step(model, opt, x, y, clip=None):
    """One step: forward, zero_grad, backward, (torch's clip_grad_norm_ when `clip`: plain
    torch's clipping; Strata's optimizer clips itself), step. Returns the loss as a float."""
    loss = loss_of(model, x, y)
    opt.zero_grad()
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss.item()


def batches(vocab, block, batch, steps, seed):
    """(x, y) windows of a token stream a model can learn (each token is a fixed function of
    the one before plus a little noise), y = x shifted by one; the same for every caller."""
    g = torch.Generator().manual_seed(seed)
    n = 4096
    noise = torch.randint(0, 2, (n,), generator=g)
    stream = torch.empty(n, dtype=torch.long)
    stream[0] = 1
    for i in range(1, n):
        stream[i] = (stream[i - 1] * 7 + 3 + noise[i]) % vocab
    for _ in range(steps):
        starts = torch.randint(0, n - block - 1, (batch,), generator=g)
        tokens = torch.stack([stream[s:s + block + 1] for s in starts.tolist()])
        yield tokens[:, :-1], tokens[:, 1:]


def adamw_reference(model, lr, betas, eps, weight_decay):
    """torch.optim.AdamW with GPT-2's two groups: decay for 2+-dim parameters, none else."""
    params = list(model.parameters())  # tied parameters once
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=lr, betas=betas, eps=eps)
