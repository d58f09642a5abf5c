#!/usr/bin/python3
"""tokens/s of a torch GPT trained through strata.torch.offload vs plain torch, in rounds.

Two configurations of the same model, batches and AdamW (clipping on, GPT-2's two weight-decay
groups), each against plain torch.optim.AdamW measured in the same round:
  fits     host_mem holds every page (parameters, gradients, both moments): the integration's
           own cost (hooks, acquires, gradient hand-over, Strata's AdamW); target >= 0.8.
  overflow parameters + moments are 4x host_mem, the rest on NVMe (nvme_dir): reported.
Each round runs plain torch, then fits, then overflow (fresh model each, warm-up steps not
timed); the ratios are per round and the report gives the median with every round.

    PYTHONPATH=build/python bench/torch_offload_bench.py --json [--rounds 3] [--nvme-dir D]
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
import gpt_model  # noqa: E402
import strata.torch as st  # noqa: E402

LR, BETAS, EPS, WD, CLIP = 3e-4, (0.9, 0.95), 1e-8, 0.1, 1.0


def state_bytes(model):
    return sum(p.numel() * 4 for p in model.parameters())


def timed_steps(model, opt, data, warmup, clip):
    """Trains on every batch of `data` (`clip`: torch's clip_grad_norm_, for plain torch);
    returns (seconds of the steps after `warmup`, losses)."""
    losses, start = [], None
    for i, (x, y) in enumerate(data):
        if i == warmup:
            start = time.perf_counter()
        losses.append(gpt_model.train_step(model, opt, x, y, clip))
    return time.perf_counter() - start, losses


def run_torch(model, data, warmup):
    opt = gpt_model.adamw_reference(model, LR, BETAS, EPS, WD)
    return timed_steps(model, opt, data, warmup, CLIP)


def run_strata(model, data, warmup, host_mem, nvme_dir):
    model, opt = st.offload(model, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, grad_clip=CLIP,
                            host_mem=host_mem, nvme_dir=nvme_dir)
    try:
        seconds, losses = timed_steps(model, opt, data, warmup, None)  # Strata clips itself
        st.runtime(model).step_wait()
        stats = st.stats(model)
    finally:
        st.close(model)
    return seconds, losses, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nvme-dir", default=os.path.join(ROOT, "build", "bench-torch"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    base = gpt_model.GPT(a.vocab, a.width, a.layers, a.width // 64, a.seq)
    n = a.warmup + a.steps
    data = list(gpt_model.batches(a.vocab, a.seq, a.batch, n, seed=1))
    tokens = a.steps * a.batch * a.seq
    params = state_bytes(base)
    fits_host = f"{4 * 4 * params // 2**20 + 64}M"       # every page of the four roles, and room
    overflow_host = f"{3 * params // 4 // 2**20}M"      # (parameters + moments) / 4
    rounds = []
    for r in range(a.rounds):
        t_torch, l_torch = run_torch(copy.deepcopy(base), data, a.warmup)
        t_fits, l_fits, _ = run_strata(copy.deepcopy(base), data, a.warmup, fits_host, None)
        shutil.rmtree(a.nvme_dir, ignore_errors=True)
        os.makedirs(a.nvme_dir)
        t_over, l_over, s_over = run_strata(copy.deepcopy(base), data, a.warmup, overflow_host,
                                            a.nvme_dir)
        worst = max(abs(x - y) / abs(y) for x, y in zip(l_fits + l_over, l_torch + l_torch))
        rounds.append({"torch_tokens_per_s": tokens / t_torch,
                       "fits_tokens_per_s": tokens / t_fits,
                       "overflow_tokens_per_s": tokens / t_over,
                       "fits_ratio": t_torch / t_fits, "overflow_ratio": t_torch / t_over,
                       "max_loss_rel_diff": worst,
                       "overflow_nvme_read_bytes": s_over["nvme_read_bytes"],
                       "overflow_nvme_write_bytes": s_over["nvme_write_bytes"],
                       "overflow_host_peak_bytes": s_over["host_peak_bytes"]})
        print(f"round {r}: torch {tokens / t_torch:.0f} tok/s, fits {tokens / t_fits:.0f} "
              f"({t_torch / t_fits:.3f}), overflow {tokens / t_over:.0f} "
              f"({t_torch / t_over:.3f}), losses within {worst:.2e}", file=sys.stderr)
    out = {"model": {"layers": a.layers, "width": a.width, "vocab": a.vocab, "seq": a.seq,
                     "batch": a.batch, "parameters": params // 4},
           "threads": a.threads, "steps": a.steps,
           "fits_host_mem": fits_host, "overflow_host_mem": overflow_host,
           "overflow_state_over_host": (3 * params) / int(overflow_host[:-1]) / 2**20,
           "fits_ratio": statistics.median(r["fits_ratio"] for r in rounds),
           "overflow_ratio": statistics.median(r["overflow_ratio"] for r in rounds),
           "rounds": rounds}
    print(json.dumps(out) if a.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
