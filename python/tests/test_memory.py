#!/usr/bin/python3
"""st.offload trains a model whose state does not fit in host_mem, in less memory than torch.

A GPT of ~26M parameters (parameters + AdamW moments: 12 bytes each, ~10x host_mem) trains a
few steps in two fresh processes: one through st.offload with host_mem 32M and an NVMe
directory, one with plain torch.optim.AdamW. Each reports its peak resident set (VmHWM). The
offloaded process must peak lower (it never holds gradients or moments and holds parameters
only while a module runs; plain torch holds parameters, gradients and both moments), and both
must compute the same losses.

Usage: test_memory.py WORKDIR                      (the driver: runs both children)
       test_memory.py --child offload|torch WORKDIR  (one training run; prints a JSON line)"""
import json
import os
import shutil
import subprocess
import sys

VOCAB, D, LAYERS, HEADS, BLOCK, BATCH, STEPS = 2048, 512, 8, 8, 64, 2, 3
LR, BETAS, EPS, WD, CLIP = 1e-3, (0.9, 0.95), 1e-8, 0.1, 1.0
HOST_MEM = 32 << 20


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def child(mode, workdir):
    import torch

    from gpt_model import GPT, adamw_reference, batches, train_step
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = GPT(VOCAB, D, LAYERS, HEADS, BLOCK)
    n_params = sum(p.numel() for p in model.parameters())
    if mode == "offload":
        import strata.torch as st
        model, opt = st.offload(model, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD,
                                grad_clip=CLIP, host_mem=HOST_MEM,
                                nvme_dir=os.path.join(workdir, "nvme"))
    else:
        opt = adamw_reference(model, LR, BETAS, EPS, WD)
    losses = []
    for x, y in batches(VOCAB, BLOCK, BATCH, STEPS, seed=1):
        losses.append(train_step(model, opt, x, y, clip=CLIP if mode == "torch" else None))
    extra = {}
    if mode == "offload":
        stats = st.stats(model)
        extra = {k: stats[k] for k in ("host_peak_bytes", "nvme_read_bytes", "nvme_write_bytes",
                                       "page_bytes", "pages")}
        st.close(model)
    print(json.dumps(dict(mode=mode, params=n_params, losses=losses, peak_rss=peak_rss_bytes(),
                          **extra)))


def run_child(mode, workdir):
    out = subprocess.run([sys.executable, __file__, "--child", mode, workdir],
                         capture_output=True, text=True, timeout=300)
    sys.stderr.write(out.stderr)
    if out.returncode != 0:
        raise AssertionError(f"the {mode} run failed ({out.returncode}):\n{out.stdout}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(os.path.join(workdir, "nvme"))
    off = run_child("offload", workdir)
    ref = run_child("torch", workdir)
    state = 12 * off["params"]
    mib = 1 << 20
    print(f"model: {off['params']} parameters; parameters + moments {state / mib:.0f} MiB = "
          f"{state / HOST_MEM:.1f}x host_mem ({HOST_MEM / mib:.0f} MiB); page "
          f"{off['page_bytes'] / mib:.0f} MiB x {off['pages']} pages")
    print(f"peak RSS: st.offload {off['peak_rss'] / mib:.0f} MiB, plain torch "
          f"{ref['peak_rss'] / mib:.0f} MiB (ratio {off['peak_rss'] / ref['peak_rss']:.2f}); "
          f"Strata host pool peak {off['host_peak_bytes'] / mib:.0f} MiB, NVMe read "
          f"{off['nvme_read_bytes'] / mib:.0f} MiB, written {off['nvme_write_bytes'] / mib:.0f} MiB")
    print(f"losses: st.offload {off['losses']}\n        plain torch {ref['losses']}")
    assert state >= 4 * HOST_MEM, "the model state must be at least 4x host_mem"
    assert off["nvme_write_bytes"] > 0, "the pages never went to NVMe"
    assert off["peak_rss"] < ref["peak_rss"], "st.offload used more memory than plain torch"
    for a, b in zip(off["losses"], ref["losses"]):
        assert abs(a - b) <= 1e-5 * abs(b), f"losses differ: {off['losses']} vs {ref['losses']}"
    shutil.rmtree(workdir)  # the NVMe stores and files it made (kept when a check fails)
    print("PASS")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1])
