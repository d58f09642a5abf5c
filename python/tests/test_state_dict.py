#!/usr/bin/python3
"""model.state_dict() and load_state_dict() on an offloaded model.

A model with a tied weight (two names), a MultiheadAttention, BatchNorm buffers and a
non-persistent buffer trains a few steps through st.offload, so its values are Strata's. Then:

1. state_dict() has torch's keys, real shapes (never the empty placeholders), the tied names
   share one tensor, and every value equals what st.save reads from Strata's pages, bit for bit.
2. torch.save(model.state_dict(), f), then in fresh processes:
   - plain torch, strata never imported: a new model's load_state_dict(torch.load(f)) gives
     every value bit for bit, and the same outputs as the offloaded model, bit for bit;
   - strata: a new, differently initialised model, offloaded, load_state_dict(torch.load(f))
     writes the values into Strata's pages (st.save reads them back bit for bit), and its
     state_dict() and outputs are the same bit for bit.
3. state_dict(keep_vars=True) gives the parameters themselves; torch.save of it writes their
   values (a file plain torch loads); a submodule's state_dict() is served too.
4. load_state_dict() of a wrong shape raises torch's size mismatch and changes nothing.
5. A state_dict() that would not fit in the memory left refuses, pointing at st.save.

Usage: test_state_dict.py WORKDIR   (the parent)
       test_state_dict.py --child plain|strata WORKDIR"""
import os
import shutil
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.conv = nn.Conv1d(d, d, 3, padding=1)
        self.bn = nn.BatchNorm1d(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.emb.weight  # tied: two names, one parameter
        self.register_buffer("scale", torch.tensor(0.5))
        self.register_buffer("scratch", torch.zeros(3), persistent=False)

    def forward(self, idx):
        h = self.emb(idx)
        h = self.bn(self.conv(h.transpose(1, 2))).transpose(1, 2)
        h = h + self.attn(h, h, h, need_weights=False)[0]
        return self.head(h) * self.scale


def data(steps):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, 64, (4, 9), generator=g) for _ in range(steps)]


def probe():
    return torch.randint(0, 64, (2, 9), generator=torch.Generator().manual_seed(5))


def outputs(model):
    """The model's outputs in eval mode. Not under no_grad: there, plain torch would take
    MultiheadAttention's fused fast path, which an offloaded model (its parameters a Tensor
    subclass) does not: other code, other rounding."""
    model.eval()
    out = model(probe()).detach()
    model.train()
    return out


def read_safetensors(path):
    """{name: tensor}, parsed here (json + struct), independently of strata.torch."""
    import json
    import struct
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name != "__metadata__":
            b, e = info["data_offsets"]
            dtype = {"F32": torch.float32, "I64": torch.int64}[info["dtype"]]
            out[name] = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]),
                                         dtype=dtype).view(info["shape"])
    return out


def identical(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {a.shape} vs {b.shape}"
    assert torch.equal(a.view(-1).view(torch.int32), b.view(-1).view(torch.int32)) \
        if a.dtype == torch.float32 else torch.equal(a, b), f"{what}: values differ"


def same_dicts(a, b, what):
    assert list(a) == list(b), f"{what}: keys {list(a)} vs {list(b)}"
    for k in a:
        identical(a[k], b[k], f"{what} {k}")


def child(mode, workdir):
    saved = torch.load(os.path.join(workdir, "state.pt"))
    expected = torch.load(os.path.join(workdir, "outputs.pt"))
    torch.manual_seed(123)  # other initial values: everything must come from the file
    model = Net()
    if mode == "plain":
        model.load_state_dict(saved)
        assert "strata" not in sys.modules, "the plain child imported strata"
        same_dicts(model.state_dict(), saved, "plain torch after load_state_dict")
    else:
        import strata.torch as st
        model, opt = st.offload(model, host_mem="1M", nvme_dir=os.path.join(workdir, "child"))
        assert not torch.equal(outputs(model), expected)
        model.load_state_dict(saved)
        same_dicts(model.state_dict(), saved, "st.offload after load_state_dict")
        path = os.path.join(workdir, "child.safetensors")
        st.save(model, path)  # straight from Strata's pages
        pages = read_safetensors(path)
        for k, v in pages.items():
            identical(v, saved[k], f"Strata's page of {k}")
    identical(outputs(model), expected, f"{mode}: outputs")
    print(f"{mode} child: load_state_dict of the saved file: every value and the outputs are "
          "bit-identical")


def main(workdir):
    import strata.torch as st
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    os.makedirs(os.path.join(workdir, "child"))
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model, opt = st.offload(Net(), lr=3e-3, weight_decay=0.1, host_mem="1M",
                            nvme_dir=os.path.join(workdir, "nvme"))
    for idx in data(4):
        out = model(idx[:, :-1])
        loss = F.cross_entropy(out.reshape(-1, 64), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()

    # 1. keys, shapes, ties, values.
    sd = model.state_dict()
    want_keys = list(Net().state_dict())
    assert list(sd) == want_keys, (list(sd), want_keys)
    assert all(v.numel() > 0 for v in sd.values()), "an empty tensor in state_dict()"
    assert sd["emb.weight"] is sd["head.weight"], "tied names should share one tensor"
    assert sd["bn.num_batches_tracked"].item() == 4
    path = os.path.join(workdir, "model.safetensors")
    st.save(model, path)
    for k, v in read_safetensors(path).items():
        identical(sd[k], v, f"state_dict()[{k}] vs Strata's page")
    print(f"state_dict(): {len(sd)} tensors, real shapes, the values in Strata's pages")

    # 2. torch.save, then load_state_dict in fresh processes, with and without Strata.
    torch.save(sd, os.path.join(workdir, "state.pt"))
    torch.save(outputs(model), os.path.join(workdir, "outputs.pt"))
    for mode in ("plain", "strata"):
        env = dict(os.environ)
        p = subprocess.run([sys.executable, __file__, "--child", mode, workdir], env=env,
                           capture_output=True, text=True, timeout=240)
        sys.stdout.write(p.stdout)
        assert p.returncode == 0, f"the {mode} child failed:\n{p.stdout}{p.stderr}"

    # 3. keep_vars=True; a submodule's state_dict.
    kept = model.state_dict(keep_vars=True)
    assert isinstance(kept["conv.weight"], nn.Parameter)
    torch.save(kept, os.path.join(workdir, "kept.pt"))
    for k, v in torch.load(os.path.join(workdir, "kept.pt")).items():
        assert type(v) in (torch.Tensor, nn.Parameter), type(v)
        identical(v.detach(), sd[k], f"torch.save(state_dict(keep_vars=True))[{k}]")
    for k, v in model.attn.state_dict().items():
        identical(v, sd["attn." + k], f"attn.state_dict()[{k}]")
    print("state_dict(keep_vars=True) saved by torch.save, and a submodule's state_dict(): "
          "the same values")

    # 4. A wrong shape: torch's error, nothing written.
    bad = dict(sd)
    bad["conv.weight"] = torch.zeros(5, 5)
    try:
        model.load_state_dict(bad)
        raise AssertionError("a wrong shape was loaded")
    except RuntimeError as e:
        assert "size mismatch for conv.weight" in str(e), e
        print(f"ok: RuntimeError: {str(e).splitlines()[-1].strip()}")
    same_dicts(model.state_dict(), sd, "after a refused load_state_dict")

    # 5. Not enough memory for the copies.
    real = st._available_bytes
    st._available_bytes = lambda: 1000
    try:
        model.state_dict()
        raise AssertionError("state_dict() did not refuse")
    except MemoryError as e:
        assert "st.save(model, path)" in str(e) and "1000" not in str(e), e
        print(f"ok: MemoryError: {e}")
    finally:
        st._available_bytes = real
    st.close(model)
    shutil.rmtree(workdir)  # the NVMe stores (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
