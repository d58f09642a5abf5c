#!/usr/bin/python3
"""The page size and grouping st.offload chooses (Note [Page size and grouping] in
strata/_layout.py) keep the NVMe traffic of an overflowing model near what a step must move.

1. The layout: for the GPT of bench/torch_offload_bench.py (41.2 MiB of parameters, a
   2.25 MiB largest weight) the chosen pages hold the four roles in at most 1.05x their bytes
   (the power-of-two pages and block groups used before took 2.04x), and the pages Strata laid
   out are the pages the choice counted.
2. The traffic: a smaller GPT of the same shape, its parameters and moments 4x host_mem, trains
   a few steps; the NVMe bytes read and written per step, from Strata's counters, are at most
   1.3x the minimum a step must move (each parameter read twice and written once, each moment
   read and written once), read and written together, and reads alone.

Usage: test_page_layout.py WORKDIR."""
import os
import shutil
import sys

import torch

import gpt_model
import strata.torch as st
from strata import _layout

MIB = 2**20


def chosen_layout_pads_little(workdir):
    torch.manual_seed(0)
    model = gpt_model.GPT(256, 384, 6, 6, 128)  # the benchmark's
    entries = st._collect(model, 0.1)[0]
    params = sum(e.nbytes for e in entries)
    host = 3 * params // 4
    page = _layout.choose_page_size(entries, host)
    laid = _layout.page_bytes_of(entries, page)
    print(f"bench GPT: {params / MIB:.2f} MiB of parameters, largest "
          f"{max(e.nbytes for e in entries) / MIB:.3f} MiB; page {page / MIB:.4f} MiB, four "
          f"roles in {laid / MIB:.1f} MiB of pages ({laid / (4 * params):.3f}x)")
    assert page % 4096 == 0 and page >= max(e.nbytes for e in entries)
    assert laid <= 1.05 * 4 * params, f"{laid / (4 * params):.3f}x the bytes"
    assert host // page >= 8, "host_mem should hold 8 pages"
    # The count is Strata's own: offload lays out exactly the pages the choice counted.
    model, _ = st.offload(model, host_mem=host, nvme_dir=os.path.join(workdir, "nvme1"))
    try:
        stats = st.stats(model)
        assert stats["page_bytes"] == page, (stats["page_bytes"], page)
        assert stats["pages"] * page == laid, (stats["pages"], laid // page)
    finally:
        st.close(model)


def traffic_near_the_minimum(workdir):
    torch.manual_seed(0)
    vocab, width, layers, seq, batch, warmup, steps = 256, 128, 4, 64, 4, 2, 4
    model = gpt_model.GPT(vocab, width, layers, width // 32, seq)
    params = sum(p.numel() * 4 for p in model.parameters())
    must_read, must_write = 4 * params, 3 * params
    data = list(gpt_model.batches(vocab, seq, batch, warmup + steps, seed=1))
    model, opt = st.offload(model, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1, grad_clip=1.0,
                            host_mem=3 * params // 4, nvme_dir=os.path.join(workdir, "nvme2"))
    try:
        rt = st.runtime(model)
        for i, (x, y) in enumerate(data):
            if i == warmup:
                before = st.stats(model)
            gpt_model.train_step(model, opt, x, y)
            rt.step_wait()  # each step's traffic finished before the next: counts repeat
        after = st.stats(model)
    finally:
        st.close(model)
    read = (after["nvme_read_bytes"] - before["nvme_read_bytes"]) / steps
    write = (after["nvme_write_bytes"] - before["nvme_write_bytes"]) / steps
    both = (read + write) / (must_read + must_write)
    print(f"small GPT: {params / MIB:.2f} MiB of parameters, host_mem {3 * params // 4 / MIB:.2f}"
          f" MiB, pages of {after['page_bytes'] / MIB:.3f} MiB; per step read "
          f"{read / MIB:.2f} MiB ({read / must_read:.2f}x), wrote {write / MIB:.2f} MiB "
          f"({write / must_write:.2f}x), together {both:.2f}x the minimum")
    assert read > 0 and write > 0, "the state should overflow to NVMe"
    assert both <= 1.3, f"NVMe traffic {both:.2f}x the minimum a step must move"
    assert read <= 1.3 * must_read, f"reads {read / must_read:.2f}x the minimum"


def main():
    workdir = sys.argv[1]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    torch.set_num_threads(2)
    chosen_layout_pads_little(workdir)
    traffic_near_the_minimum(workdir)
    shutil.rmtree(workdir)  # the NVMe tiers' slot files: 0.7 GB
    print("ok")


if __name__ == "__main__":
    main()
