#!/usr/bin/python3
"""Parameters read outside their module's forward (Note [Parameter reads]), and the errors
st.offload gives instead of wrong results.

Reads, each trained against torch.optim.AdamW on a deepcopy (losses within 1e-5 relative):
- nn.MultiheadAttention offloaded by itself: its forward reads its child out_proj's weight;
- a module run through .forward() directly, so that no module hook runs at all;
- in-place changes outside forward and backward (p.mul_, nn.init, p[0] = ...) under no_grad
  land in Strata's pages, as torch's land in its tensors; model.zero_grad() discards Strata's
  gradients;
- shape questions (p.shape, p.numel(), len(p)) answer the real shape.

Errors, each naming the parameter (and the module, where one runs):
- a read that cannot be served: the runtime closed, or a module holding more pages than host_mem;
- a parameter replaced or added after offload; p.data or p.data_ptr() of an unheld parameter;
  p.grad while the gradient waits in Strata (clip_grad_norm_ would see none), or set;
  model.half() / model.double(); a parameter changed in place while lent for reading
  (nn.Embedding(max_norm=...)); torch.jit.trace; copy.deepcopy of the model; a second
  st.offload of the same parameters; opt.state_dict(); opt.add_param_group().
And a forward that raised half-way leaves nothing held once the next one ran.

Usage: test_reads.py WORKDIR."""
import copy
import os
import shutil
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import strata
import strata.torch as st

TOL = 1e-5


def fresh(workdir, name):
    d = os.path.join(workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def pair(model, workdir, name, **opts):
    ref = copy.deepcopy(model)
    opts.setdefault("host_mem", "1M")
    model, opt = st.offload(model, lr=1e-2, weight_decay=0.0, nvme_dir=fresh(workdir, name),
                            **opts)
    return model, opt, ref, torch.optim.AdamW(ref.parameters(), lr=1e-2, weight_decay=0.0)


def expect(kind, words, call):
    try:
        call()
    except kind as e:
        for w in words:
            assert w in str(e), f"'{w}' not in: {e}"
        print(f"ok: {type(e).__name__}: {e}")
        return e
    raise AssertionError(f"no {kind.__name__} raised (expected one saying {words})")


def same(tag, a, b):
    r = abs(a - b) / max(abs(b), 1e-30)
    assert r <= TOL, f"{tag}: {a} vs torch {b}"
    return r


def train(model, opt, ref, ref_opt, inputs, steps, call=None):
    call = call or (lambda m, x: m(x))
    worst = 0.0
    for step in range(steps):
        x = inputs(step)
        for m, o, mine in ((model, opt, True), (ref, ref_opt, False)):
            loss = call(m, x).square().mean()
            o.zero_grad()
            loss.backward()
            o.step()
            if mine:
                got = loss.item()
            else:
                worst = max(worst, same(f"step {step}", got, loss.item()))
    return worst


def multihead_attention(workdir):
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    model, opt, ref, ref_opt = pair(mha, workdir, "mha")
    g = torch.Generator().manual_seed(1)
    xs = [torch.randn(2, 5, 32, generator=g) for _ in range(6)]
    worst = train(model, opt, ref, ref_opt, lambda i: xs[i], 6,
                  call=lambda m, x: m(x, x, x, need_weights=False)[0])
    with torch.no_grad():  # evaluation: the fast path's conditions, out_proj read the same way
        model.eval()
        ref.eval()
        assert torch.equal(model(xs[0], xs[0], xs[0])[0], ref(xs[0], xs[0], xs[0])[0]) or \
            same("eval", model(xs[0], xs[0], xs[0])[0].sum().item(),
                 ref(xs[0], xs[0], xs[0])[0].sum().item()) <= TOL
    assert all(e.holds == 0 for e in model._strata.entries)
    st.close(model)
    print(f"MultiheadAttention offloaded alone: losses match torch (max relative {worst:.2e})")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 32)
        self.b = nn.Linear(32, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


def bare_forward(workdir):
    """No module hook runs: the parameters are served to F.linear's calls one by one."""
    torch.manual_seed(0)
    model, opt, ref, ref_opt = pair(Net(), workdir, "bare")
    g = torch.Generator().manual_seed(2)
    xs = [torch.randn(8, 16, generator=g) for _ in range(5)]
    worst = train(model, opt, ref, ref_opt, lambda i: xs[i], 5,
                  call=lambda m, x: m.b.forward(torch.relu(m.a.forward(x))))
    st.close(model)
    print(f"modules run through .forward() (no hooks): losses match torch (max {worst:.2e})")


def writes_outside_forward(workdir):
    torch.manual_seed(0)
    model, opt, ref, ref_opt = pair(Net(), workdir, "writes")
    assert model.a.weight.shape == (32, 16) and model.a.weight.numel() == 512
    assert len(model.a.weight) == 32 and model.a.weight.size(1) == 16
    assert model.a.weight.stride() == (16, 1) and model.a.weight.dim() == 2
    for m in (model, ref):
        with torch.no_grad():
            m.a.weight.mul_(0.5)
            m.a.weight[0] = 1.0
            m.b.bias.copy_(torch.arange(4.0))
        nn.init.zeros_(m.a.bias)
    assert torch.equal(model.state_dict()["a.weight"], ref.state_dict()["a.weight"])
    assert torch.equal(model.state_dict()["b.bias"], torch.arange(4.0))
    g = torch.Generator().manual_seed(3)
    xs = [torch.randn(8, 16, generator=g) for _ in range(4)]
    # model.zero_grad() between two backward passes discards the first, as in torch.
    for m in (model, ref):
        m(xs[0]).square().mean().backward()
        m.zero_grad()
    worst = train(model, opt, ref, ref_opt, lambda i: xs[i], 4)
    for k, v in ref.state_dict().items():
        assert torch.allclose(model.state_dict()[k], v, rtol=1e-5, atol=1e-7), k
    st.close(model)
    print(f"in-place writes under no_grad and model.zero_grad(): as torch (max {worst:.2e})")


class Wide(nn.Module):
    """Six 64K parameters of its own, held together while its forward runs."""

    def __init__(self):
        super().__init__()
        for i in range(6):
            setattr(self, f"w{i}", nn.Parameter(torch.randn(128, 128) * 0.01))

    def forward(self, x):
        for i in range(6):
            x = x @ getattr(self, f"w{i}")
        return x


class ReadsChild(nn.Module):
    """Its forward reads its child's weight through F.linear; the child never runs."""

    def __init__(self):
        super().__init__()
        self.child = nn.Linear(8, 8)

    def forward(self, x):
        return F.linear(x, self.child.weight)


def unservable(workdir):
    model, _ = st.offload(ReadsChild(), host_mem="1M", nvme_dir=fresh(workdir, "closed"))
    st.close(model)
    err = expect(strata.Error, ["cannot read parameter 'child.weight'", "module 'ReadsChild'",
                                "runtime is closed"], lambda: model(torch.randn(2, 8)))
    assert err.status == "STRATA_FAILED_PRECONDITION"

    # Six 64K weights in one module, five 64K pages: the sixth cannot be held.
    model, opt = st.offload(Wide(), host_mem="320K", page_size="64K",
                            nvme_dir=fresh(workdir, "wide"), options={"stall_timeout_ms": 500})
    err = expect(strata.Error, ["cannot read parameter 'w", "for module 'Wide'",
                                "host budget"],
                 lambda: model(torch.randn(2, 128)).sum().backward())
    print(f"   (status {err.status})")
    st.close(model)


def errors(workdir):
    torch.manual_seed(0)
    model, opt = st.offload(Net(), host_mem="1M", nvme_dir=fresh(workdir, "errors"))
    x = torch.randn(2, 16)
    expect(RuntimeError, ["p.data", "'a.weight'", "state_dict"], lambda: model.a.weight.data)
    expect(RuntimeError, ["data_ptr()", "'a.weight'"], lambda: model.a.weight.data_ptr())
    expect(RuntimeError, ["numpy()", "'b.bias'"], lambda: model.b.bias.numpy())
    model.float()  # no-op conversions stay possible
    model.to("cpu")
    expect(RuntimeError, ["replacing p.data", "model.half()"], model.half)
    expect(RuntimeError, ["replacing p.data"], model.double)
    expect(RuntimeError, ["jit.trace"], lambda: torch.jit.trace(model, x))
    expect(RuntimeError, ["cannot be copied", "state_dict"], lambda: copy.deepcopy(model))
    expect(ValueError, ["'a.weight'", "offloaded already"],
           lambda: st.offload(nn.Sequential(model.a), host_mem="1M"))
    expect(NotImplementedError, ["st.checkpoint"], opt.state_dict)
    expect(ValueError, ["fixed at st.offload"],
           lambda: opt.add_param_group({"params": [nn.Parameter(torch.zeros(2))]}))
    model(x).sum().backward()
    expect(RuntimeError, ["p.grad", "'a.weight'", "grad_clip"],
           lambda: torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0))
    expect(RuntimeError, ["setting p.grad", "'b.bias'"],
           lambda: setattr(model.b.bias, "grad", torch.zeros(4)))
    opt.step()  # still fine after all the refusals
    assert all(p.grad is None for p in model.parameters())  # the step discarded them

    old = model.a.weight
    model.a.weight = nn.Parameter(torch.zeros(32, 16))
    expect(RuntimeError, ["'weight' of module 'a'", "replaced", "a.weight"], lambda: model(x))
    expect(RuntimeError, ["replaced"], opt.step)
    model.a.weight = old
    model.c = nn.Linear(4, 4)
    expect(RuntimeError, ["'c.weight'", "added after st.offload"], lambda: model(x))
    del model.c
    model(x)  # as offloaded again
    st.close(model)

    # A tie read by another module than its owner: replacing it is seen at the model's forward.
    other, _ = st.offload(ReadsChild(), host_mem="1M", nvme_dir=fresh(workdir, "errors2"))
    other.child.weight = nn.Parameter(torch.zeros(8, 8))
    expect(RuntimeError, ["'weight' of module 'child'", "replaced"],
           lambda: other(torch.randn(2, 8)))
    st.close(other)

    emb, _ = st.offload(nn.Embedding(10, 4, max_norm=1.0), host_mem="1M",
                        nvme_dir=fresh(workdir, "renorm"))
    expect(RuntimeError, ["'weight'", "changed in place", "module 'Embedding'"],
           lambda: emb(torch.tensor([1, 2])))
    assert all(e.holds == 0 for e in emb._strata.entries)
    st.close(emb)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Linear(8, 8)
        self.fail = False

    def forward(self, x):
        if self.fail:
            raise ValueError("inner")
        return self.w(x)


class Outer(nn.Module):
    """Holds its own weight while calling Inner, which raises; Outer's forward raises too."""

    def __init__(self):
        super().__init__()
        self.own = nn.Linear(8, 8)
        self.inner = Inner()

    def forward(self, x):
        return self.inner(self.own(x))


def raised_forward(workdir):
    model, opt = st.offload(Outer(), host_mem="1M", nvme_dir=fresh(workdir, "raised"))
    model.inner.fail = True
    expect(ValueError, ["inner"], lambda: model(torch.randn(2, 8)))
    state = model._strata
    model.inner.fail = False
    model(torch.randn(2, 8)).sum().backward()
    opt.step()
    assert not state.running and all(e.holds == 0 for e in state.entries), \
        "a forward that raised left parameters held"
    st.close(model)
    print("a forward that raised: the next forward ended its holds")


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    torch.set_num_threads(2)
    multihead_attention(workdir)
    bare_forward(workdir)
    writes_outside_forward(workdir)
    unservable(workdir)
    errors(workdir)
    raised_forward(workdir)
    shutil.rmtree(workdir)  # the NVMe stores (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
