#!/usr/bin/python3
"""Train torchvision's resnet18 with its parameters and AdamW state in Strata's tiers.

    cmake -S . -B build && cmake --build build -j
    mkdir /tmp/nvme-run
    PYTHONPATH=build/python /usr/bin/python3 examples/torchvision_offload.py /tmp/nvme-run [out.pt]

The model is torchvision.models.resnet18 as torchvision builds it (Conv2d, BatchNorm2d with
its running statistics, the residual blocks), unchanged: st.offload takes any nn.Module. The
host pool gets 80 MiB, five 16 MiB pages (its largest weight is 9 MiB), while its parameters
and AdamW moments take 128 MiB, so pages move to the (empty) directory given as the NVMe tier.
The task: 32x32 images, each with one of ten small bright squares; the class is which one.
At the end the trained weights are saved the way torch users save them, torch.save of
model.state_dict(), a file plain torch loads without Strata."""
import sys
import time

import torch
import torch.nn.functional as F

import strata.torch as st

try:
    import torchvision
except ImportError:
    sys.exit("torchvision is missing: install python3-torchvision (tools/install-deps.sh does)")

STEPS, BATCH = 20, 16


def batches(generator):
    """Noise images with a bright 4x4 square at one of ten places; the label is the place."""
    spots = [(r, c) for r in (2, 14, 26) for c in (2, 14, 26)] + [(14, 8)]
    while True:
        x = 0.1 * torch.randn(BATCH, 3, 32, 32, generator=generator)
        y = torch.randint(0, 10, (BATCH,), generator=generator)
        for i, label in enumerate(y.tolist()):
            r, c = spots[label]
            x[i, :, r:r + 4, c:c + 4] += 1.0
        yield x, y


def main(nvme_dir, out=None):
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=10)
    n = sum(p.numel() for p in model.parameters())
    model, opt = st.offload(model, lr=1e-3, weight_decay=0.05, host_mem="80M",
                            nvme_dir=nvme_dir)
    print(f"resnet18: {n / 1e6:.1f}M parameters; parameters + AdamW moments "
          f"{12 * n / 2**20:.0f} MiB, host pool 80 MiB")
    data = batches(torch.Generator().manual_seed(1))
    losses, start = [], time.monotonic()
    for step in range(STEPS):
        x, y = next(data)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()  # each gradient goes to Strata as soon as it is final
        opt.step()  # Strata's AdamW starts in the background; the next forward waits for it
        losses.append(loss.item())
        if step % 4 == 0 or step == STEPS - 1:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    stats = st.stats(model)
    print(f"{STEPS} steps in {time.monotonic() - start:.0f} s, each on a fresh batch")
    print(f"host pool peak {stats['host_peak_bytes'] >> 20} MiB of "
          f"{stats['host_budget_bytes'] >> 20} MiB; NVMe read {stats['nvme_read_bytes'] >> 20} "
          f"MiB, written {stats['nvme_write_bytes'] >> 20} MiB")
    if out:
        torch.save(model.state_dict(), out)  # real values, read from Strata's pages
        print(f"saved model.state_dict() to {out}")
    st.close(model)
    if not losses[-1] < 0.5 * losses[0]:
        sys.exit(f"training did not reduce the loss: {losses[0]:.4f} -> {losses[-1]:.4f}")
    if stats["host_peak_bytes"] > stats["host_budget_bytes"] or stats["nvme_write_bytes"] == 0:
        sys.exit("the host pool went over its budget, or nothing went to NVMe")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
