#!/usr/bin/python3
"""Misuse raises strata.Error with Strata's message; the process does not crash.

Each case checks the exception's class, its status and words of its message, and that the
objects involved are still usable (or cleanly unusable) afterwards.

Usage: test_bad_use.py WORKDIR."""
import os
import shutil
import sys

import torch
import torch.nn as nn

import strata
import strata.torch as st


def expect_error(status, words, call):
    try:
        call()
    except strata.Error as e:
        assert isinstance(e, RuntimeError)
        message = str(e)
        assert e.status == status, f"status {e.status}, expected {status}: {message}"
        for w in words:
            assert w in message, f"'{w}' not in the message: {message}"
        print(f"ok: {status}: {message}")
        return
    raise AssertionError(f"no strata.Error ({status}) raised")


def small_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 8))


def budget_too_small(workdir):
    model = small_model()
    before = [p.detach().clone() for p in model.parameters()]
    # 64K pages (the default for this model): 64K holds one, Strata needs five.
    expect_error("STRATA_RESOURCE_EXHAUSTED", ["host_mem", "pages", "raise host_mem"],
                 lambda: st.offload(model, host_mem="64K"))
    # A failed offload leaves the model as it was, and it can be offloaded properly after.
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    model, opt = st.offload(model, host_mem="1M", nvme_dir=os.path.join(workdir, "nvme"))
    model(torch.randn(2, 64)).sum().backward()
    opt.step()
    st.close(model)


def page_too_small():
    model = nn.Linear(256, 256)  # a 256K weight: spans four 64K pages, no host pointer to it
    before = [p.detach().clone() for p in model.parameters()]
    expect_error("STRATA_FAILED_PRECONDITION", ["'weight'", "spans", "page_size"],
                 lambda: st.offload(model, host_mem="4M", page_size="64K"))
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))


def acquired_twice_for_write():
    rt = strata.Runtime(host_mem="1M", page_size="64K")
    t = rt.register("layer.w", 1024, "f32", "parameter", "layer")
    rt.acquire(t, "write", "host")
    expect_error("STRATA_FAILED_PRECONDITION", ["layer.w", "already acquired for write"],
                 lambda: rt.acquire(t, "write", "host"))
    # The runtime cannot close while a tensor is held, and stays usable.
    expect_error("STRATA_FAILED_PRECONDITION", [], rt.close)
    rt.release(t)
    rt.acquire(t, "write", "host")
    rt.release(t)
    rt.close()
    rt.close()  # a second close is a no-op, as for files


def use_after_close():
    rt = strata.Runtime(host_mem="1M", page_size="64K")
    t = rt.register("w", 1024)
    rt.close()
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"], lambda: rt.acquire(t))
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"], rt.stats)
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"], lambda: rt.step())

    model, opt = st.offload(small_model(), host_mem="1M")
    st.close(model)
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"],
                 lambda: model(torch.randn(2, 64)))
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"], opt.step)
    expect_error("STRATA_FAILED_PRECONDITION", ["runtime is closed"], lambda: st.stats(model))


def other_misuse():
    expect_error("STRATA_INVALID_ARGUMENT", ["unknown option", "host_memory"],
                 lambda: strata.Runtime(host_memory="1M"))
    a = strata.Runtime(host_mem="1M", page_size="64K")
    b = strata.Runtime(host_mem="1M", page_size="64K")
    t = a.register("w", 1024)
    b.register("w", 1024)
    expect_error("STRATA_INVALID_ARGUMENT", ["another runtime"], lambda: b.acquire(t))
    try:
        st.offload(nn.Linear(4, 4).double(), host_mem="1M")
        raise AssertionError("a float64 model was offloaded")
    except TypeError as e:
        assert "float32" in str(e), e
        print(f"ok: TypeError: {e}")


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    budget_too_small(workdir)
    page_too_small()
    acquired_twice_for_write()
    use_after_close()
    other_misuse()
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
