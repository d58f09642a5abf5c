#!/usr/bin/python3
"""A torch training loop killed mid-run resumes from its last checkpoint with the same losses.

The child trains a small GPT through st.offload (host_mem a quarter of the state, so pages go
through NVMe), checkpoints every CKPT_EVERY steps, and prints each step's loss. The parent:
  1. runs it to the end: the uninterrupted losses;
  2. runs it again in a fresh directory and SIGKILLs it once it has printed step KILL_AFTER
     (a checkpoint and more steps behind it, the next step's update running);
  3. reopens that directory from the newest checkpoint recorded there (offload(resume=...))
     and trains the remaining steps.
The resumed losses must equal the uninterrupted run's bit for bit: the runtime restores every
parameter, gradient and moment and the step count, and the data position is the step.

Usage: test_resume_after_kill.py WORKDIR (emptied first)."""
import json
import os
import shutil
import signal
import subprocess
import sys

STEPS, CKPT_EVERY, KILL_AFTER = 12, 4, 6
VOCAB, D, LAYERS, HEADS, BLOCK, BATCH = 256, 64, 2, 4, 32, 4


def child(workdir, resume):
    import torch
    import strata.torch as st
    from gpt_model import GPT, batches, train_step

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = GPT(VOCAB, D, LAYERS, HEADS, BLOCK)
    model, opt = st.offload(model, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1, grad_clip=1.0,
                            host_mem="1M", nvme_dir=os.path.join(workdir, "nvme"),
                            checkpoint_dir=os.path.join(workdir, "ckpt"), resume=resume)
    start = st.runtime(model).step_count()
    data = list(batches(VOCAB, BLOCK, BATCH, STEPS, seed=1))
    for step in range(start, STEPS):
        loss = train_step(model, opt, *data[step])
        print(f"step {step} loss {loss!r}", flush=True)
        if (step + 1) % CKPT_EVERY == 0:
            st.checkpoint(model, f"step-{step + 1}")
    st.close(model)


def newest_checkpoint(workdir):
    with open(os.path.join(workdir, "ckpt", "strata_checkpoints.json")) as f:
        return json.load(f)["checkpoints"][0]["name"]  # newest first


def losses(lines):
    out = {}
    for line in lines:
        if line.startswith("step "):
            _, step, _, loss = line.split()
            out[int(step)] = float(loss)
    return out


def run(workdir, resume=None, kill_after=None):
    cmd = [sys.executable, __file__, "--child", workdir] + ([resume] if resume else [])
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line.strip())
        if kill_after is not None and line.startswith(f"step {kill_after} "):
            p.send_signal(signal.SIGKILL)
            break
    rc = p.wait(timeout=300)
    if kill_after is None and rc != 0:
        raise SystemExit(f"the child failed (exit {rc}): {lines[-3:]}")
    if kill_after is not None and rc != -signal.SIGKILL:
        raise SystemExit(f"the child was not killed (exit {rc})")
    return losses(lines)


def main(workdir):
    shutil.rmtree(workdir, ignore_errors=True)
    whole, killed = os.path.join(workdir, "whole"), os.path.join(workdir, "killed")
    os.makedirs(whole)
    os.makedirs(killed)
    want = run(whole)
    assert sorted(want) == list(range(STEPS)), want
    before = run(killed, kill_after=KILL_AFTER)
    name = newest_checkpoint(killed)
    resumed_from = int(name.split("-")[1])
    print(f"killed after step {KILL_AFTER}; resuming from checkpoint {name}")
    after = run(killed, resume=name)
    assert sorted(after) == list(range(resumed_from, STEPS)), sorted(after)
    print(f"{'step':>4} {'uninterrupted':>22} {'killed + resumed':>22}")
    for step in range(STEPS):
        got = after.get(step, before.get(step))
        print(f"{step:>4} {want[step]:>22.17g} {got:>22.17g}")
        assert got == want[step], f"step {step}: {got!r} != {want[step]!r}"
    print(f"resume_after_kill: the {STEPS - resumed_from} steps after the kill equal the "
          f"uninterrupted run's bit for bit")
    shutil.rmtree(workdir)  # the NVMe stores and checkpoints (kept when a check fails)


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        main(sys.argv[1])
