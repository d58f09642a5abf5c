#!/usr/bin/python3
"""A zoo of the modules and idioms PyTorch users write, each trained through st.offload.

Each model trains STEPS (10) steps through st.offload with an NVMe directory, parameters and AdamW
moments several times host_mem, and the same steps with torch.optim.AdamW (GPT-2's groups:
decay on 2+-dim parameters only) plus clip_grad_norm_ where the model clips, on a deepcopy of
the same initial model and the same batches. Forward and backward are the same torch code in
both; only where the parameters live and who runs AdamW differ, so each step's loss must match
to 1e-5 relative. Where torch is itself chaotic (BatchNorm, deep residual stacks: rounding
differences grow step by step), a model is checked against the spread torch shows between 1 and
2 threads, measured here on the same batches: at step k the difference may be up to the
largest 1-vs-2-thread difference seen up to step k (and 1e-5 always).

Every run also checks: the host pool stayed within host_mem, pages went through NVMe, the model
kept no copy of its parameters, and, once the order is learned (the third step on), every
acquire of a step was foreseen by the learned access order, reads from outside a parameter's
module included.

  transformer_encoder  nn.TransformerEncoder: norm_first, a causal mask, the embedding read
                       again as the head through F.linear
  transformer_decoder  nn.TransformerDecoder: self- and cross-attention (MultiheadAttention
                       reads its out_proj.weight without calling out_proj)
  tied_functional      a head tied through F.linear(h, self.emb.weight), a weight read as
                       self.mix.weight.t() by its parent, a regularizer read in the loop
  resnet18             torchvision.models.resnet18: Conv2d, BatchNorm2d and its buffers
  vit_b_16             torchvision.models.vit_b_16 at 32x32 images
  lstm                 residual stacks of two-layer nn.LSTMs
  checkpoint           blocks run through torch.utils.checkpoint (reentrant and not)

Usage: test_zoo.py MODEL WORKDIR (emptied first); MODEL one of the names above, or "list"."""
import copy
import math
import os
import shutil
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

import strata.torch as st
from gpt_model import adamw_reference

STEPS = 10
TOL = 1e-5


class EncoderLM(nn.Module):
    """A causal language model on nn.TransformerEncoder (pre-LN), its head tied to the token
    embedding through F.linear."""

    def __init__(self, vocab=256, d=64, layers=7, heads=4, block=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(block, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(block),
                             persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        h = self.emb(idx) + self.pos[:t]
        h = self.encoder(h, mask=self.mask[:t, :t])
        return F.linear(h, self.emb.weight)


class DecoderLM(nn.Module):
    """nn.TransformerDecoder over a memory made from a source sequence: causal self-attention
    and cross-attention."""

    def __init__(self, vocab=256, d=64, layers=5, heads=4, block=16):
        super().__init__()
        self.src = nn.Embedding(vocab, d)
        self.tgt = nn.Embedding(vocab, d)
        self.memory = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d))
        layer = nn.TransformerDecoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True)
        self.decoder = nn.TransformerDecoder(layer, layers)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(block),
                             persistent=False)

    def forward(self, idx):
        src, tgt = idx[:, :idx.shape[1] // 2], idx
        t = tgt.shape[1]
        memory = self.memory(self.src(src))
        return self.head(self.decoder(self.tgt(tgt), memory, tgt_mask=self.mask[:t, :t]))


class TiedFunctional(nn.Module):
    """Parameters read outside their module's forward: the head is F.linear over the
    embedding's weight, and `mix`'s weight is read by this module as mix.weight.t() (mix's own
    forward never runs)."""

    def __init__(self, vocab=256, d=64, layers=11):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            for _ in range(layers))
        self.mix = nn.Linear(d, d, bias=False)
        self.norm = nn.LayerNorm(d)

    def forward(self, idx):
        h = self.emb(idx)
        for block in self.blocks:
            h = h + block(h)
        h = h + torch.tanh(h @ self.mix.weight.t())
        return F.linear(self.norm(h), self.emb.weight)


class LSTMLM(nn.Module):
    """Residual stacks of two-layer nn.LSTMs."""

    def __init__(self, vocab=256, d=64, stacks=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstms = nn.ModuleList(nn.LSTM(d, d, num_layers=2, batch_first=True)
                                   for _ in range(stacks))
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.emb(idx)
        for lstm in self.lstms:
            out, _ = lstm(h)
            h = h + out
        return self.head(h)


class Checkpointed(nn.Module):
    """MLP blocks recomputed in backward: torch.utils.checkpoint, reentrant (1.13's default)
    for even blocks, use_reentrant=False for odd ones."""

    def __init__(self, vocab=256, d=64, layers=11):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.emb(idx)
        for i, block in enumerate(self.blocks):
            h = h + torch.utils.checkpoint.checkpoint(block, h, use_reentrant=(i % 2 == 0))
        return self.head(h)


def tokens(vocab, block=16, batch=4):
    def make(g):
        x = torch.randint(0, vocab, (batch, block + 1), generator=g)
        return x[:, :-1], x[:, 1:]
    return make


def images(size, classes=10, batch=4):
    def make(g):
        return torch.randn(batch, 3, size, size, generator=g), torch.randint(0, classes, (batch,),
                                                                               generator=g)
    return make


def cross_entropy(out, y):
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def tied_loss(model, out, y):
    """Cross-entropy plus an L2 term on the embedding, read in the training loop."""
    return cross_entropy(out, y) + 1e-4 * model.emb.weight.square().sum()


def torchvision_model(name):
    def make():
        try:
            import torchvision
        except ImportError:
            sys.exit("test_zoo: torchvision is missing: install python3-torchvision "
                     "(tools/install-deps.sh does)")
        return getattr(torchvision.models, name)(
            num_classes=10, **({"image_size": 32} if name.startswith("vit") else {}))
    return make


# name -> (make the model, make a batch from a generator, loss(model, out, y), options, chaotic,
#          host_mem in pages, minimum (parameters + moments) / host_mem).
# host_mem must hold Strata's step (four pages while it updates in the background) and what the
# model holds at once (a module's parameters in its forward: a two-layer LSTM's five pages;
# in backward, those whose gradient is not final yet): 16 pages, sized to the smallest multiple
# of 4 KiB (at least 64 KiB) that holds every parameter. resnet18 gets 5 pages, the least Strata
# takes: its largest weight (512x512x3x3) needs 9 MiB pages, and its 11.2M parameters are then
# only 2.8x five of them (below 4x at any width: that one tensor is a fifth of the model, and a
# tensor is served from one page). vit_b_16 gets 15 pages of 16 MiB: its 9 MiB MLP weights
# beside 6.75 MiB attention weights pad 9 MiB pages to 245 of them, 16 MiB ones to 112 (1.75 GiB).
# The store's slot files take their whole capacity on disk: its default NVMe tier is the 112
# pages and the 15 the host pool can stage (1.98 GiB; Note [NVMe capacity]).
MODELS = {
    "transformer_encoder": (EncoderLM, tokens(256), lambda m, o, y: cross_entropy(o, y),
                            dict(lr=3e-3, weight_decay=0.1, grad_clip=1.0), False, 16, 4),
    "transformer_decoder": (DecoderLM, tokens(256), lambda m, o, y: cross_entropy(o, y),
                            dict(lr=3e-3, weight_decay=0.1, grad_clip=1.0), False, 16, 4),
    "tied_functional": (TiedFunctional, tokens(256), tied_loss,
                        dict(lr=3e-3, weight_decay=0.1), False, 16, 4),
    "resnet18": (torchvision_model("resnet18"), images(32, batch=8),
                 lambda m, o, y: cross_entropy(o, y), dict(lr=1e-4, weight_decay=0.05), True, 5,
                 2.5),
    "vit_b_16": (torchvision_model("vit_b_16"), images(32, batch=2),
                 lambda m, o, y: cross_entropy(o, y),
                 dict(lr=1e-4, weight_decay=0.05, grad_clip=1.0, page_size=16 << 20), False, 15,
                 4),
    "lstm": (LSTMLM, tokens(256), lambda m, o, y: cross_entropy(o, y),
             dict(lr=3e-3, weight_decay=0.0, grad_clip=1.0), False, 16, 4),
    "checkpoint": (Checkpointed, tokens(256), lambda m, o, y: cross_entropy(o, y),
                   dict(lr=3e-3, weight_decay=0.1), False, 16, 4),
}


def batches(make_batch):
    g = torch.Generator().manual_seed(1)
    return [make_batch(g) for _ in range(STEPS)]


def train_torch(model, data, loss_fn, opts, threads):
    torch.set_num_threads(threads)
    opt = adamw_reference(model, opts["lr"], (0.9, 0.999), 1e-8, opts["weight_decay"])
    losses = []
    for x, y in data:
        loss = loss_fn(model, model(x), y)
        opt.zero_grad()
        loss.backward()
        if opts.get("grad_clip"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), opts["grad_clip"])
        opt.step()
        losses.append(loss.item())
    torch.set_num_threads(2)
    return losses


def train_offloaded(model, data, loss_fn, opts, host_pages, workdir):
    """Returns (losses, host_mem, per-step (foreseen, unforeseen) acquires, stats)."""
    largest = max(p.numel() * p.element_size() for p in model.parameters())
    page = max(64 << 10, -(-largest // 4096) * 4096)  # the smallest page that holds every one
    opts = dict(opts)
    page = opts.pop("page_size", page)
    host_mem = host_pages * page
    model, opt = st.offload(model, host_mem=host_mem, page_size=page,
                            nvme_dir=os.path.join(workdir, "nvme"), **opts)
    losses, order, last = [], [], (0, 0)
    for x, y in data:
        loss = loss_fn(model, model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        s = st.stats(model)
        order.append((s["predicted_acquires"] - last[0], s["unpredicted_acquires"] - last[1]))
        last = (s["predicted_acquires"], s["unpredicted_acquires"])
    with torch._C.DisableTorchFunction():  # the tensors as stored, not as strata.torch serves them
        kept = [n for n, p in model.named_parameters() if p.data.numel() != 0]
    assert not kept, f"the model holds parameter memory after training: {kept}"
    st.runtime(model).step_wait()
    stats = st.stats(model)
    st.close(model)
    return losses, host_mem, order, stats


def check(name, losses, ref, spread):
    """Per step: (relative difference, allowed). Raises past the allowance."""
    rows, worst_spread = [], 0.0
    for k, (a, b) in enumerate(zip(losses, ref)):
        rel = abs(a - b) / abs(b)
        if spread is not None:
            worst_spread = max(worst_spread, abs(spread[k] - b) / abs(b))
        allowed = max(TOL, worst_spread)
        rows.append((rel, allowed))
        assert rel <= allowed, (f"{name} step {k}: loss {a!r} vs torch {b!r} (relative "
                                f"{rel:.3e}, allowed {allowed:.3e})")
    return rows


def main(name, workdir):
    make, make_batch, loss_fn, opts, chaotic, host_pages, min_ratio = MODELS[name]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = make()
    refs = [copy.deepcopy(model) for _ in range(2 if chaotic else 1)]
    data = batches(make_batch)
    n_params = sum(p.numel() for p in model.parameters())

    t0 = time.monotonic()
    losses, host_mem, order, stats = train_offloaded(model, data, loss_fn, opts, host_pages,
                                                     workdir)
    t1 = time.monotonic()
    ref = train_torch(refs[0], data, loss_fn, opts, threads=2)
    spread = train_torch(refs[1], data, loss_fn, opts, threads=1) if chaotic else None
    t2 = time.monotonic()

    rows = check(name, losses, ref, spread)
    ratio = 12 * n_params / host_mem
    print(f"{name}: {n_params} parameters; parameters + moments {12 * n_params / 2**20:.1f} MiB"
          f" = {ratio:.1f}x host_mem ({host_mem / 2**20:g} MiB, pages of "
          f"{stats['page_bytes'] / 2**20:g} MiB)")
    print(f"{'step':>4} {'st.offload':>12} {'torch':>12} {'rel':>9} {'allowed':>9}"
          + (f" {'torch 1 thr':>12}" if spread else "") + f" {'foreseen':>9} {'not':>4}")
    for k, (rel, allowed) in enumerate(rows):
        print(f"{k:4d} {losses[k]:12.7f} {ref[k]:12.7f} {rel:9.2e} {allowed:9.2e}"
              + (f" {spread[k]:12.7f}" if spread else "")
              + f" {order[k][0]:9d} {order[k][1]:4d}")
    print(f"host pool peak {stats['host_peak_bytes']} of {stats['host_budget_bytes']} B; NVMe "
          f"read {stats['nvme_read_bytes'] / 2**20:.0f} MiB, written "
          f"{stats['nvme_write_bytes'] / 2**20:.0f} MiB; st.offload {t1 - t0:.1f} s, torch "
          f"{t2 - t1:.1f} s ({2 if chaotic else 1} run{'s' if chaotic else ''})")
    assert ratio >= min_ratio, f"parameters + moments are only {ratio:.2f}x host_mem"
    assert stats["steps"] == STEPS
    assert stats["host_peak_bytes"] <= stats["host_budget_bytes"], "over the host budget"
    assert stats["nvme_write_bytes"] > 0 and stats["nvme_read_bytes"] > 0, "no paging happened"
    for k in range(2, STEPS):
        assert order[k][1] == 0, (f"step {k}: {order[k][1]} acquires the learned order did not "
                                  "foresee")
    assert all(math.isfinite(x) for x in losses)
    shutil.rmtree(workdir)  # its NVMe store: gigabytes for vit_b_16 (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    if sys.argv[1] == "list":
        print("\n".join(MODELS))
    else:
        main(sys.argv[1], sys.argv[2])
