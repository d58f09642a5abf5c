#!/usr/bin/python3
"""PyTorch's training throughput on the same model as `strata bench step`: the peer.

The model, data windows and AdamW + clipping are those of tests/reference/gpt2_reference.py
(GPT-2 written in plain torch ops, materialised causal attention as Strata computes it), or with
--arch llama of tests/reference/llama_reference.py (Hugging Face's LlamaForCausalLM semantics).
Debian's torch runs its matmuls through OpenBLAS, so a run has two thread knobs: torch's
intra-op threads and OpenBLAS's (read at import, hence one child process per setting). With
--threads N the parent tries every (torch, blas) split whose product is at most N... and also
N x N, and reports the best, so the peer is measured at its best setting on this machine.
Prints one JSON object on stdout.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(args):
    import torch
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "reference"))
    import gpt2_reference as ref

    torch.set_num_threads(args.torch_threads)
    cfg = {"n_layer": args.n_layer, "n_head": args.n_head, "n_embd": args.n_embd,
           "vocab_size": args.vocab, "block_size": args.seq}
    if args.arch == "llama":
        import llama_reference as llama
        cfg.update(n_kv_head=args.n_kv_head, ffn_dim=args.ffn_dim, rope_theta=10000.0,
                   norm_eps=1e-5, tied=False)
        params = llama.init_params(cfg, 1337, torch.float32)
        loss_fn = llama.llama_loss
    else:
        params = ref.init_params(cfg, seed=1337)
        loss_fn = ref.gpt2_loss
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    decay = [p for p in leaves.values() if p.dim() >= 2]
    no_decay = [p for p in leaves.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, args.vocab, (args.batch * args.seq * 4 + args.seq + 2,),
                           generator=g).tolist()
    times = []
    for k in range(args.warmup + args.steps):
        x, y = ref.get_batch(tokens, k, args.batch, args.seq)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(leaves, cfg, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(leaves.values()), 1.0)
        opt.step()
        if k >= args.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    print(json.dumps({"torch_threads": args.torch_threads,
                      "blas_threads": int(os.environ.get("OPENBLAS_NUM_THREADS", "0")),
                      "tokens_per_s": args.batch * args.seq / median}))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--arch", default="gpt2", choices=["gpt2", "llama"])
    p.add_argument("--n-kv-head", type=int, default=2, help="llama: key/value heads")
    p.add_argument("--ffn-dim", type=int, default=1024, help="llama: the MLP's width")
    p.add_argument("--n-layer", type=int, default=6)
    p.add_argument("--n-head", type=int, default=6)
    p.add_argument("--n-embd", type=int, default=384)
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--torch-threads", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.torch_threads:
        return child(args)
    n = args.threads
    settings = sorted({(t, b) for t in range(1, n + 1) for b in range(1, n + 1) if t * b <= n}
                      | {(n, n)})
    results = []
    for t, b in settings:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(b), OMP_NUM_THREADS=str(t))
        cmd = [sys.executable, os.path.abspath(__file__), "--torch-threads", str(t)] + [
            f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
            if k not in ("torch_threads",)]
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        results.append(json.loads(out.strip().splitlines()[-1]))
        print(f"torch_step: torch {t} x blas {b} threads: "
              f"{results[-1]['tokens_per_s']:.0f} tokens/s", file=sys.stderr)
    best = max(results, key=lambda r: r["tokens_per_s"])
    print(json.dumps({"bench": "torch_step", "batch": args.batch, "seq": args.seq,
                      "threads": n, "tokens_per_s": best["tokens_per_s"],
                      "best_setting": {"torch_threads": best["torch_threads"],
                                       "blas_threads": best["blas_threads"]},
                      "all": results}))


if __name__ == "__main__":
    main()
