#!/usr/bin/python3
"""strata.torch trains exactly as PyTorch does.

A small GPT (tied head) trains 20 steps through st.offload with gradient clipping and weight
decay on 2+-dim parameters only; the reference is a deepcopy of the same model trained with
torch.optim.AdamW (two groups) and clip_grad_norm_ on the same batches. Each step's loss must
match to 1e-5 relative (the forward is the same torch code; only where the parameters live and
who runs AdamW differ), and so must each step's global gradient norm. host_mem is a quarter of
the model state, so pages go through the NVMe directory: the test checks that they did.

Usage: test_exactness.py WORKDIR (emptied first)."""
import copy
import os
import shutil
import sys

import torch

import strata.torch as st
from gpt_model import GPT, adamw_reference, batches, loss_of

VOCAB, D, LAYERS, HEADS, BLOCK, BATCH, STEPS = 256, 64, 2, 4, 32, 4, 20
LR, BETAS, EPS, WD, CLIP = 3e-3, (0.9, 0.95), 1e-8, 0.1, 0.8
TOL = 1e-5


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = GPT(VOCAB, D, LAYERS, HEADS, BLOCK)
    ref = copy.deepcopy(model)
    assert ref.lm_head.weight is ref.wte.weight
    ref_opt = adamw_reference(ref, LR, BETAS, EPS, WD)
    model, opt = st.offload(model, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, grad_clip=CLIP,
                            host_mem="1M", nvme_dir=os.path.join(workdir, "nvme"))
    with torch._C.DisableTorchFunction():  # the tensors as stored, not as strata.torch serves them
        assert all(p.data.numel() == 0 for p in model.parameters()), "the model kept a copy"

    print(f"{'step':>4} {'strata loss':>14} {'torch loss':>14} {'rel':>9} "
          f"{'strata |g|':>11} {'torch |g|':>11}")
    worst, clipped, ref_norms, norms = 0.0, 0, [], []
    for step, (x, y) in enumerate(batches(VOCAB, BLOCK, BATCH, STEPS, seed=1)):
        loss = loss_of(model, x, y)
        if step > 0:  # this forward waited for every update of the last step: its norm is known
            norms.append(opt.last_grad_norm)
        opt.zero_grad()
        loss.backward()
        opt.step()

        ref_loss = loss_of(ref, x, y)
        ref_opt.zero_grad()
        ref_loss.backward()
        ref_norms.append(float(torch.nn.utils.clip_grad_norm_(ref.parameters(), CLIP)))
        ref_opt.step()

        r = rel(loss.item(), ref_loss.item())
        worst = max(worst, r)
        clipped += ref_norms[-1] > CLIP
        print(f"{step:4d} {loss.item():14.8f} {ref_loss.item():14.8f} {r:9.2e} "
              f"{norms[-1] if norms else float('nan'):11.6f} {ref_norms[-2] if step else float('nan'):11.6f}")
        assert r <= TOL, f"step {step}: loss {loss.item()} vs torch {ref_loss.item()}"
    st.runtime(model).step_wait()
    norms.append(opt.last_grad_norm)
    for i, (a, b) in enumerate(zip(norms, ref_norms)):
        assert rel(a, b) <= 1e-4, f"step {i}: gradient norm {a} vs torch {b}"

    stats = st.stats(model)
    print(f"max relative loss difference {worst:.3e} over {STEPS} steps (tolerance {TOL}); "
          f"{clipped} of {STEPS} steps clipped; nvme read {stats['nvme_read_bytes']} B, "
          f"written {stats['nvme_write_bytes']} B; steps {stats['steps']}")
    assert stats["steps"] == STEPS
    assert 0 < clipped < STEPS, "clipping should be active on some steps but not all"
    assert stats["nvme_write_bytes"] > 0 and stats["nvme_read_bytes"] > 0, "no paging happened"
    st.close(model)
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
