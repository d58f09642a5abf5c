#!/usr/bin/python3
"""st.offload in the ways torch code commonly trains, each against plain torch:

- gradient accumulation: two backward passes per step (the second adds into Strata's gradient);
- a learning-rate scheduler changing opt.param_groups' lr (read at every step);
- a module called twice in one forward (its parameters are acquired, released, and acquired
  again in backward for each call) and an in-place op on a module's output;
- a frozen parameter (requires_grad=False): kept in Strata, never updated, released after
  backward;
- evaluation under torch.no_grad: nothing stays acquired.

Each runs a few steps on both and requires the losses to match to 1e-5 relative.

Usage: test_usage.py WORKDIR."""
import copy
import os
import shutil
import sys

import torch
import torch.nn as nn

import strata.torch as st


class Reused(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(16, 32)
        self.shared = nn.Linear(32, 32)  # applied twice
        self.frozen = nn.Linear(32, 32)
        self.frozen.weight.requires_grad_(False)
        self.out = nn.Linear(32, 4)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        h = self.shared(h)
        h.mul_(0.5)  # in place on a hooked module output
        h = torch.tanh(self.shared(h))
        return self.out(self.frozen(h))


def pair(workdir, name):
    torch.manual_seed(0)
    model = Reused()
    ref = copy.deepcopy(model)
    nvme = os.path.join(workdir, name)
    os.makedirs(nvme)
    model, opt = st.offload(model, lr=1e-2, weight_decay=0.0, host_mem="1M", nvme_dir=nvme)
    ref_opt = torch.optim.AdamW([p for p in ref.parameters() if p.requires_grad], lr=1e-2,
                                weight_decay=0.0)
    return model, opt, ref, ref_opt


def check(tag, a, b):
    r = abs(a - b) / abs(b)
    assert r <= 1e-5, f"{tag}: {a} vs torch {b}"
    return r


def run(workdir, name, micro_batches, schedule):
    model, opt, ref, ref_opt = pair(workdir, name)
    frozen_before = ref.frozen.weight.detach().clone()
    scheds = [torch.optim.lr_scheduler.StepLR(o, step_size=2, gamma=0.5) for o in (opt, ref_opt)]
    g = torch.Generator().manual_seed(3)
    worst = 0.0
    for step in range(6):
        opt.zero_grad()
        ref_opt.zero_grad()
        for _ in range(micro_batches):
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            loss = (model(x) - y).square().mean()
            ref_loss = (ref(x) - y).square().mean()
            loss.backward()
            ref_loss.backward()
            worst = max(worst, check(f"{name} step {step}", loss.item(), ref_loss.item()))
        opt.step()
        ref_opt.step()
        if schedule:
            for s in scheds:
                s.step()
    with torch.no_grad():  # evaluation: nothing may stay acquired
        x = torch.randn(8, 16, generator=g)
        check(f"{name} eval", model(x).square().sum().item(), ref(x).square().sum().item())
    state = model._strata
    assert all(e.holds == 0 for e in state.entries), "a parameter stayed acquired"
    st.close(model, restore=True)
    assert torch.equal(model.frozen.weight, frozen_before), "the frozen weight changed"
    print(f"{name}: losses match torch (max relative difference {worst:.2e})")


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    torch.set_num_threads(2)
    run(workdir, "plain", micro_batches=1, schedule=False)
    run(workdir, "accumulation", micro_batches=2, schedule=False)
    run(workdir, "scheduler", micro_batches=1, schedule=True)
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
