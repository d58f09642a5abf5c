#!/usr/bin/python3
"""Throughput of a torch model trained through strata.torch.offload vs plain torch, in rounds,
and the NVMe traffic of the overflowing configuration against what a step must move.

Two configurations of the same model, batches and AdamW (clipping on, weight decay for 2+-dim
parameters only), each against plain torch.optim.AdamW measured in the same round:
  fits     host_mem holds every page (parameters, gradients, both moments): the integration's
           own cost (hooks, acquires, gradient hand-over, Strata's AdamW); target >= 0.8.
  overflow parameters + moments are 4x host_mem, the rest on NVMe (nvme_dir).
Each round runs plain torch, then fits, then overflow (fresh model each, warm-up steps not
timed; Strata's last step is waited for inside the timed span); the ratios are per round and
the report gives the median with every round.

NVMe amplification (overflow): the bytes read and written per timed step (Strata's
nvme_read_bytes / nvme_write_bytes) against the least a step must move when the state does not
fit: every parameter read twice (forward, backward) and written once, every AdamW moment read
and written once, so 2P + 2M read and P + 2M written (P the parameters' bytes, M the trainable
ones', each moment M). Gradients are left out of that minimum: those that spill are counted in
the measured bytes.

Models (--model):
  gpt       a GPT (python/tests/gpt_model.py: tied head), tokens/s (the default).
  vit_b_16  torchvision.models.vit_b_16 at --image-size, images/s.
A model st.offload cannot train (one step, tried first) is reported with the error instead of
a figure.

    PYTHONPATH=build/python bench/torch_offload_bench.py --json [--model M] [--rounds 3]
"""
import argparse
import copy
import json
import os
import shutil
import statistics
import sys
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
import gpt_model  # noqa: E402
import strata.torch as st  # noqa: E402

LR, BETAS, EPS, WD, CLIP = 3e-4, (0.9, 0.95), 1e-8, 0.1, 1.0


def vit(image_size):
    import torchvision
    return torchvision.models.vit_b_16(image_size=image_size)


def workload(a):
    """(model, batches, units per step, unit name, description)."""
    g = torch.Generator().manual_seed(1)
    n = a.warmup + a.steps
    if a.model == "gpt":
        model = gpt_model.GPT(a.vocab, a.width, a.layers, a.width // 64, a.seq)
        data = list(gpt_model.batches(a.vocab, a.seq, a.batch, n, seed=1))
        return model, data, a.batch * a.seq, "tokens", {
            "layers": a.layers, "width": a.width, "vocab": a.vocab, "seq": a.seq,
            "batch": a.batch}
    model = vit(a.image_size)
    data = [(torch.randn(a.batch, 3, a.image_size, a.image_size, generator=g),
             torch.randint(0, 1000, (a.batch,), generator=g)) for _ in range(n)]
    return model, data, a.batch, "images", {"image_size": a.image_size, "batch": a.batch}


def timed_steps(model, opt, data, warmup, clip, sync, counters):
    """Trains on every batch of `data` (`clip`: torch's clip_grad_norm_, for plain torch).
    Returns (seconds of the steps after `warmup`, losses, counters at the start and end of the
    timed steps); `sync` waits for work still running (Strata's step)."""
    losses, start, first = [], None, None
    for i, (x, y) in enumerate(data):
        if i == warmup:
            sync()
            first = counters()
            start = time.perf_counter()
        losses.append(gpt_model.train_step(model, opt, x, y, clip))
    sync()
    return time.perf_counter() - start, losses, first, counters()


def run_torch(model, data, warmup):
    opt = gpt_model.adamw_reference(model, LR, BETAS, EPS, WD)
    seconds, losses, _, _ = timed_steps(model, opt, data, warmup, CLIP, lambda: None, dict)
    return seconds, losses


def run_strata(model, data, warmup, host_mem, nvme_dir):
    """(seconds, losses, NVMe bytes read and written per timed step, stats at the end)."""
    # The NVMe tier: twice the four roles' bytes, not the default four times (ViT-B: 2.7 GB).
    state = 4 * sum(p.numel() * 4 for p in model.parameters())
    options = {"nvme_mem": f"{2 * state // 2**20 + 64}M"} if nvme_dir else None
    model, opt = st.offload(model, lr=LR, betas=BETAS, eps=EPS, weight_decay=WD, grad_clip=CLIP,
                            host_mem=host_mem, nvme_dir=nvme_dir, options=options)
    try:
        rt = st.runtime(model)
        seconds, losses, first, last = timed_steps(model, opt, data, warmup, None,  # Strata clips
                                                   rt.step_wait, lambda: st.stats(model))
    finally:
        st.close(model)
    steps = len(data) - warmup
    per_step = {k: (last[k] - first[k]) / steps for k in ("nvme_read_bytes", "nvme_write_bytes")}
    return seconds, losses, per_step, last


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--model", choices=("gpt", "vit_b_16"), default="gpt")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=384)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--image-size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nvme-dir", default=os.path.join(ROOT, "build", "bench-torch"))
    return ap.parse_args()


def one_round(a, base, data, per_step, fits_host, overflow_host, must):
    t_torch, l_torch = run_torch(copy.deepcopy(base), data, a.warmup)
    t_fits, l_fits, _, _ = run_strata(copy.deepcopy(base), data, a.warmup, fits_host, None)
    shutil.rmtree(a.nvme_dir, ignore_errors=True)
    os.makedirs(a.nvme_dir)
    t_over, l_over, io, s_over = run_strata(copy.deepcopy(base), data, a.warmup, overflow_host,
                                            a.nvme_dir)
    shutil.rmtree(a.nvme_dir)  # its slot files: 2.7 GB for vit_b_16
    worst = max(abs(x - y) / abs(y) for x, y in zip(l_fits + l_over, l_torch + l_torch))
    read, write = io["nvme_read_bytes"], io["nvme_write_bytes"]
    units = a.steps * per_step
    return {"torch_per_s": units / t_torch, "fits_per_s": units / t_fits,
            "overflow_per_s": units / t_over,
            "fits_ratio": t_torch / t_fits, "overflow_ratio": t_torch / t_over,
            "max_loss_rel_diff": worst,
            "overflow_nvme_read_bytes_per_step": read,
            "overflow_nvme_write_bytes_per_step": write,
            "nvme_amplification": (read + write) / (must["read"] + must["write"]),
            "nvme_read_amplification": read / must["read"],
            "nvme_write_amplification": write / must["write"],
            "overflow_host_peak_bytes": s_over["host_peak_bytes"],
            "overflow_page_bytes": s_over["page_bytes"], "overflow_pages": s_over["pages"]}


def blocker(base, data, host_mem):
    """Why st.offload cannot train the model (one step of one sample, on a copy), or None."""
    model, opt = st.offload(copy.deepcopy(base), host_mem=host_mem)
    try:
        x, y = data[0]
        gpt_model.train_step(model, opt, x[:1], y[:1])
        st.runtime(model).step_wait()
    except Exception as e:  # noqa: BLE001: reported as the benchmark's result
        return f"{type(e).__name__}: {e}"
    finally:
        st.close(model)
    return None


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    base, data, per_step, unit, shape = workload(a)
    params = sum(p.numel() * 4 for p in base.parameters())  # tied ones once
    trained = sum(p.numel() * 4 for p in base.parameters() if p.requires_grad)
    must = {"read": 2 * params + 2 * trained, "write": params + 2 * trained}
    fits_host = f"{8 * params // 2**20 + 64}M"  # every page of the four roles, padded up to 2x
    blocked = blocker(base, data, fits_host)
    if blocked is not None:  # a result all the same: what stops st.offload, and when
        print(f"st.offload cannot train {a.model}: {blocked}", file=sys.stderr)
        print(json.dumps({"model": dict(shape, name=a.model), "unit": unit, "blocked": blocked}))
        return
    overflow_host = f"{(params + 2 * trained) // 4 // 2**20}M"  # (parameters + moments) / 4
    rounds = []
    for r in range(a.rounds):
        rounds.append(one_round(a, base, data, per_step, fits_host, overflow_host, must))
        x = rounds[-1]
        print(f"round {r}: torch {x['torch_per_s']:.1f} {unit}/s, fits {x['fits_per_s']:.1f} "
              f"({x['fits_ratio']:.3f}), overflow {x['overflow_per_s']:.1f} "
              f"({x['overflow_ratio']:.3f}), NVMe {x['nvme_amplification']:.3f}x the minimum "
              f"(read {x['nvme_read_amplification']:.3f}x, write "
              f"{x['nvme_write_amplification']:.3f}x), losses within "
              f"{x['max_loss_rel_diff']:.2e}", file=sys.stderr)
    med = lambda k: statistics.median(r[k] for r in rounds)  # noqa: E731
    out = {"model": dict(shape, name=a.model, parameters=params // 4), "unit": unit,
           "threads": a.threads, "steps": a.steps, "warmup": a.warmup,
           "fits_host_mem": fits_host, "overflow_host_mem": overflow_host,
           "overflow_state_over_host": (params + 2 * trained) / int(overflow_host[:-1]) / 2**20,
           "must_read_bytes_per_step": must["read"], "must_write_bytes_per_step": must["write"],
           "fits_ratio": med("fits_ratio"), "overflow_ratio": med("overflow_ratio"),
           "nvme_amplification": med("nvme_amplification"), "rounds": rounds}
    print(json.dumps(out) if a.json else json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
