#!/usr/bin/python3
"""Train a small language model with its parameters and AdamW state in Strata's tiers.

    cmake -S . -B build && cmake --build build -j
    mkdir /tmp/nvme-run
    PYTHONPATH=build/python /usr/bin/python3 examples/torch_offload.py /tmp/nvme-run [out.safetensors]

The host pool gets 2 MiB, less than a quarter of the model's parameters and moments, so pages
move to the (empty) directory given as the NVMe tier while it trains. docs/embedding.md
explains what st.offload does."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import strata.torch as st

VOCAB, WIDTH, LAYERS, SEQ, BATCH, STEPS = 512, 128, 4, 32, 8, 40


class TinyLM(nn.Module):
    """Embedding, residual MLP blocks, a head tied to the embedding."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(WIDTH), nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(),
                          nn.Linear(4 * WIDTH, WIDTH)) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)
        self.head.weight = self.embed.weight  # tied: one parameter, offloaded once
        nn.init.normal_(self.embed.weight, std=0.02)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.norm(x))


def batches(generator):
    """Windows of a sequence whose next token is a fixed function of the current one."""
    stream = (torch.arange(8192) * 7 + 3) % VOCAB
    while True:
        starts = torch.randint(0, len(stream) - SEQ - 1, (BATCH,), generator=generator)
        windows = torch.stack([stream[s:s + SEQ + 1] for s in starts.tolist()])
        yield windows[:, :-1], windows[:, 1:]


def main(nvme_dir, out=None):
    torch.manual_seed(0)
    model, opt = st.offload(TinyLM(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1,
                            grad_clip=1.0, host_mem="2M", nvme_dir=nvme_dir)
    data = batches(torch.Generator().manual_seed(1))
    losses = []
    for step in range(STEPS):
        x, y = next(data)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()  # each gradient goes to Strata as soon as it is final
        opt.step()  # Strata's AdamW starts in the background; the next forward waits for it
        losses.append(loss.item())
        if step % 10 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {loss.item():.4f}")

    stats = st.stats(model)
    print(f"host pool peak {stats['host_peak_bytes'] >> 10} KiB of "
          f"{stats['host_budget_bytes'] >> 10} KiB; NVMe read {stats['nvme_read_bytes'] >> 20} "
          f"MiB, written {stats['nvme_write_bytes'] >> 20} MiB; {stats['predicted_acquires']} of "
          f"{stats['acquires']} acquires foreseen by the learned order")
    if out:
        st.save(model, out)
        print(f"saved {out}")
    st.close(model)
    if not losses[-1] < 0.5 * losses[0]:
        sys.exit(f"training did not reduce the loss: {losses[0]:.4f} -> {losses[-1]:.4f}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
