#!/usr/bin/python3
"""st.checkpoint's record, <checkpoint_dir>/strata_checkpoints.json, is the one checkpoint record
format (memory/checkpoint_record.h, format 2, embed/checkpoint_book.h for the C API's entries).

1. The record has its checksum, and each checkpoint's fingerprint holds the page size it was
   saved with; offload(resume=...) takes that page size from it: a checkpoint saved under one
   host_mem resumes under another that alone would choose another page size, with its values.
2. A format-1 record of an older Strata (page_bytes in each entry) still gives its page size.

Usage: test_checkpoint_record.py WORKDIR."""
import json
import os
import shutil
import sys

import torch

import strata.torch as st
from gpt_model import GPT
from strata import _layout

CFG = dict(vocab=256, d=64, n_layer=2, n_head=4, block=32)

# What the C API wrote before format 2 (embed/checkpoint_book.cc at 0942f3a), for one tensor.
FORMAT1 = """{
 "checkpoints": [
  {
   "manifest": "embed-old",
   "name": "old",
   "page_bytes": 81920,
   "step": 3,
   "tensors": [
    [
     "w",
     4096,
     0,
     3,
     "g"
    ]
   ]
  }
 ],
 "format": 1
}"""


def resume_under_another_host_mem(workdir):
    ckpt = os.path.join(workdir, "ckpt")
    entries = st._collect(GPT(**CFG), 0.1)[0]
    saved_page = _layout.choose_page_size(entries, "512K")
    other_page = _layout.choose_page_size(entries, "1M")
    assert saved_page != other_page, "the two host_mem choose one page size: nothing is tested"
    torch.manual_seed(0)
    model, _ = st.offload(GPT(**CFG), host_mem="512K", nvme_dir=os.path.join(workdir, "nvme"),
                          checkpoint_dir=ckpt)
    st.checkpoint(model, "c1")
    st.close(model)
    with open(os.path.join(ckpt, "strata_checkpoints.json")) as f:
        record = json.load(f)
    assert record["format"] == 2 and len(record["checksum"]) == 16, record
    entry = record["checkpoints"][0]
    assert entry["name"] == "c1" and entry["fingerprint"]["page_size"] == str(saved_page), entry

    torch.manual_seed(0)
    want = {k: v.clone() for k, v in GPT(**CFG).state_dict().items()}
    torch.manual_seed(1)  # other values, which the checkpoint's replace
    model, _ = st.offload(GPT(**CFG), host_mem="1M", nvme_dir=os.path.join(workdir, "nvme"),
                          checkpoint_dir=ckpt, resume="c1")
    st.close(model, restore=True)
    for name, value in model.state_dict().items():
        assert torch.equal(value, want[name]), f"{name} is not the checkpoint's"
    print(f"c1 saved with pages of {saved_page} bytes resumes under a host_mem that would "
          f"choose {other_page}")


def format1_record_gives_its_page_size(workdir):
    old = os.path.join(workdir, "old")
    os.makedirs(old)
    with open(os.path.join(old, "strata_checkpoints.json"), "w") as f:
        f.write(FORMAT1)
    assert _layout.checkpoint_page_size(old, "old") == 81920
    assert _layout.checkpoint_page_size(old, "none") is None


def main():
    workdir = sys.argv[1]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    resume_under_another_host_mem(workdir)
    format1_record_gives_its_page_size(workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
