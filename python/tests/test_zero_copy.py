#!/usr/bin/python3
"""Parameters are not copied between Strata and torch.

1. strata.Runtime.acquire returns a memoryview over Strata's pointer: torch.frombuffer of it
   has exactly that address, and a value written through it is what the next acquire reads.
2. During a module's forward under st.offload, the weight the module computes with lies inside
   the memory the matching strata acquire returned (a view of the page, not a copy), and
   outside forward the model holds no parameter memory at all.

Usage: test_zero_copy.py WORKDIR."""
import ctypes
import os
import shutil
import sys

import torch
import torch.nn as nn

import strata
import strata.torch as st


def address(memory):
    """The address of a writable buffer, found without torch."""
    return ctypes.addressof(ctypes.c_char.from_buffer(memory))


def runtime_level():
    with strata.Runtime(host_mem="1M", page_size="64K") as rt:
        t = rt.register("w", 4096, "f32", "parameter", "layer0")
        mv = rt.acquire(t, "overwrite", "host")
        view = torch.frombuffer(mv, dtype=torch.float32)
        assert view.data_ptr() == address(mv), "frombuffer copied the page"
        view.copy_(torch.arange(1024, dtype=torch.float32))
        rt.release(t)
        again = torch.frombuffer(rt.acquire(t, "read", "host"), dtype=torch.float32)
        assert torch.equal(again, torch.arange(1024, dtype=torch.float32))
        rt.release(t)
    print("runtime level: frombuffer(acquire(...)) is the page itself")


class Recorder(nn.Linear):
    """A Linear that records the address of the weight its forward computes with."""
    seen = []

    def forward(self, x):
        Recorder.seen.append((self.weight.data_ptr(), self.weight.numel() * 4))
        return super().forward(x)


class SpyRuntime:
    """Forwards to the real runtime and records the memory every acquire returned."""

    def __init__(self, rt):
        self._rt = rt
        self.acquired = []

    def acquire(self, tensor, intent="read", tier="host"):
        mv = self._rt.acquire(tensor, intent, tier)
        self.acquired.append((tensor.name, address(mv), len(mv)))
        return mv

    def __getattr__(self, name):
        return getattr(self._rt, name)


def module_level(workdir):
    torch.manual_seed(0)
    model = nn.Sequential(Recorder(256, 256), nn.ReLU(), Recorder(256, 16))
    model, opt = st.offload(model, host_mem="4M", nvme_dir=os.path.join(workdir, "nvme"))
    spy = SpyRuntime(model._strata.runtime)
    model._strata.runtime = spy
    for _ in range(2):
        loss = model(torch.randn(8, 256)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert len(Recorder.seen) == 4
    for (ptr, nbytes), name in zip(Recorder.seen, ["0.weight", "2.weight"] * 2):
        inside = [n for n, a, size in spy.acquired if a <= ptr and ptr + nbytes <= a + size]
        assert inside == [name] or set(inside) == {name}, \
            f"forward's weight at {ptr:#x} is not in the memory Strata returned for {name}"
        print(f"forward weight at {ptr:#x} lies in Strata's memory of {name}")
    with torch._C.DisableTorchFunction():  # the tensors as stored, not as strata.torch serves them
        assert all(p.data.numel() == 0 for p in model.parameters()), \
            "parameters held outside forward"
    st.close(model)


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    runtime_level()
    module_level(workdir)
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
