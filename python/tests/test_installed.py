#!/usr/bin/python3
"""The installed package works on its own: `cmake --install BUILD --prefix P` puts it at
P/lib/python3/dist-packages/strata, and with only that on PYTHONPATH (run from another
directory) `import strata.torch` loads P/lib/libstrata.so (the module's RPATH) and trains.

Usage: test_installed.py CMAKE BUILD_DIR WORKDIR."""
import os
import shutil
import subprocess
import sys

CHECK = r"""
import os, sys, torch, strata, strata.torch as st
prefix = sys.argv[1]
assert strata.__file__.startswith(prefix), strata.__file__
libs = {l.split()[-1] for l in open("/proc/self/maps") if "libstrata.so" in l}
assert libs == {os.path.realpath(os.path.join(prefix, "lib", "libstrata.so"))}, libs
model, opt = st.offload(torch.nn.Linear(8, 8), host_mem="1M")
model(torch.randn(2, 8)).sum().backward()
opt.step()
st.close(model)
print("installed package:", strata.__file__, "on", libs.pop())
"""


def main(cmake, build, workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    prefix = os.path.join(workdir, "prefix")
    subprocess.run([cmake, "--install", build, "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    site = os.path.join(prefix, "lib", "python3", "dist-packages")
    assert os.path.isdir(os.path.join(site, "strata")), "no package at P/lib/python3/dist-packages"
    env = dict(os.environ, PYTHONPATH=site)
    env.pop("LD_LIBRARY_PATH", None)
    subprocess.run([sys.executable, "-c", CHECK, prefix], check=True, env=env, cwd=workdir)
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    main(*sys.argv[1:4])
