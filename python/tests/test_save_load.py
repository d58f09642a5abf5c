#!/usr/bin/python3
"""st.save / st.load (safetensors) and st.checkpoint / offload(resume=...).

1. st.save writes a safetensors file that an independent reader (json + struct + numpy, in this
   file) parses: every parameter once under its torch name (the tied head is wte.weight),
   nothing else, and the values are the trained ones (st.close(restore=True) gives them back).
2. st.load of that file into a differently initialised offloaded model makes it compute the
   same outputs bit for bit; a file with a wrong shape or a missing tensor is refused.
3. A checkpoint after 3 steps, reopened in a new runtime with resume=, continues with exactly
   the losses the uninterrupted run had (parameters, moments and the step count come back).

Usage: test_save_load.py WORKDIR."""
import json
import os
import shutil
import struct
import sys

import numpy as np
import torch

import strata
import strata.torch as st
from gpt_model import GPT, batches, train_step

CFG = dict(vocab=256, d=64, n_layer=2, n_head=4, block=32)
OPT = dict(lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1, grad_clip=1.0, host_mem="1M")


def read_safetensors(path):
    """{name: numpy array}: the format read independently of strata.torch."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    assert (8 + n) % 8 == 0, "the data should start 8-byte aligned"
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", info
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype="<f4").reshape(
            info["shape"])
    return out


def train(model, opt, steps, seed):
    losses = []
    for x, y in batches(CFG["vocab"], CFG["block"], 4, steps, seed):
        losses.append(train_step(model, opt, x, y))
    return losses


def save_and_load(workdir):
    torch.manual_seed(0)
    model, opt = st.offload(GPT(**CFG), nvme_dir=os.path.join(workdir, "a"), **OPT)
    train(model, opt, 3, seed=1)
    path = os.path.join(workdir, "model.safetensors")
    st.save(model, path)
    saved = read_safetensors(path)
    names = [n for n, _ in model.named_parameters()]
    assert sorted(saved) == sorted(names), (sorted(saved), sorted(names))
    assert "lm_head.weight" not in saved and "wte.weight" in saved

    x = next(batches(CFG["vocab"], CFG["block"], 4, 1, seed=9))[0]
    with torch.no_grad():
        expected = model(x)
    torch.manual_seed(123)  # other initial weights
    other, _ = st.offload(GPT(**CFG), nvme_dir=os.path.join(workdir, "b"), **OPT)
    with torch.no_grad():
        assert not torch.equal(other(x), expected)
        st.load(other, path)
        assert torch.equal(other(x), expected), "the loaded model computes other outputs"
    print(f"save/load: {len(saved)} tensors; the loaded model's outputs are bit-identical")

    st.close(model, restore=True)  # plain torch tensors again
    for name, p in model.named_parameters():
        assert np.array_equal(p.detach().numpy(), saved[name]), name
    with torch.no_grad():
        assert torch.equal(model(x), expected), "the restored model computes other outputs"
    print("close(restore=True): the parameters are the saved values; forward works without "
          "Strata")

    bad = os.path.join(workdir, "bad.safetensors")
    torch.manual_seed(0)
    small = GPT(vocab=128, d=64, n_layer=2, n_head=4, block=32)  # wte of another shape
    small_model, _ = st.offload(small, nvme_dir=os.path.join(workdir, "c"), **OPT)
    st.save(small_model, bad)
    for call, words in ((lambda: st.load(other, bad), "shape"),
                        (lambda: st.load(small_model, path), "shape")):
        try:
            call()
            raise AssertionError("a file of another model was loaded")
        except ValueError as e:
            assert words in str(e), e
            print(f"ok: ValueError: {e}")
    for m in (other, small_model):
        st.close(m)


def checkpoint_and_resume(workdir):
    nvme, ckpt = os.path.join(workdir, "ckpt-nvme"), os.path.join(workdir, "ckpt")
    os.makedirs(nvme)
    os.makedirs(ckpt)
    torch.manual_seed(0)
    model, opt = st.offload(GPT(**CFG), nvme_dir=nvme, checkpoint_dir=ckpt, **OPT)
    all_batches = list(batches(CFG["vocab"], CFG["block"], 4, 6, seed=1))
    losses = []
    for i, (x, y) in enumerate(all_batches):
        if i == 3:
            st.checkpoint(model, "step3")
        losses.append(train_step(model, opt, x, y))
    st.close(model)

    torch.manual_seed(7)  # the values must come from the checkpoint, not from these
    model, opt = st.offload(GPT(**CFG), nvme_dir=nvme, checkpoint_dir=ckpt, resume="step3",
                            **OPT)
    assert st.runtime(model).step_count() == 3
    resumed = []
    for x, y in all_batches[3:]:
        resumed.append(train_step(model, opt, x, y))
    rt = st.runtime(model)
    rt.drop_checkpoint("step3")  # strata_checkpoint_drop: the record forgets it
    try:
        rt.drop_checkpoint("step3")
        raise AssertionError("a dropped checkpoint was dropped again")
    except strata.Error as e:
        assert e.status == "STRATA_NOT_FOUND" and "no checkpoint 'step3'" in str(e), e
    st.close(model)
    print(f"uninterrupted steps 4-6: {losses[3:]}\nresumed at step 3:      {resumed}")
    assert resumed == losses[3:], "the resumed run diverged"


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    save_and_load(workdir)
    checkpoint_and_resume(workdir)
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
