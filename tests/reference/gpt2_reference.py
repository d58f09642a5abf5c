#!/usr/bin/python3
"""PyTorch reference for Strata's GPT: the equivalence test of DESIGN.md invariant 5.

Two commands:

  gpt2_reference.py selfcheck
      Checks this file's own GPT-2 (no Strata involved): parameter names and count, the
      vectorised model against a naive loop-by-loop float64 version, autograd against finite
      differences, and float32 against float64 (the noise floor the tolerances below rely on).

  gpt2_reference.py compare --strata BIN --workdir DIR
      Runs the selfcheck, then drives `strata train` on a token file it writes itself and
      compares with the same computation in PyTorch float32:
        1. `--steps 0 --export W0`: names, shapes and model shape metadata of the initial
           weights (the reference starts from exactly these weights);
        2. `--steps 1 --export-grads G --log-json L1`: step 1's loss and every gradient
           (before clipping) to 1e-5 relative, ||a - b|| / ||b|| per tensor;
        3. `--steps 20 --grad-clip C --lr 1e-3 --log-json L --export W20`: the 20 losses and the
           final weights to 1e-4 relative, with C chosen so that some steps clip and some don't;
        4. `--init W0 --steps 1 --export-grads G2`: importing W0 gives bit-identical gradients.
      Exit status 0 only if everything matched.

The model here is written from the GPT-2 paper and the Hugging Face layout, never from
Strata's code: pre-LN blocks, tied embeddings (logits = x @ wte^T), no dropout, LayerNorm eps
1e-5, GELU with the tanh approximation, causal attention scaled by 1/sqrt(head size), mean
cross-entropy. Parameter names and layouts are Hugging Face GPT-2's: Conv1D weights are stored
(in, out) and applied as y = x @ W + b.

Batches follow Strata's documented windows: step k (0-based) row i reads
x = tokens[s:s+T], y = tokens[s+1:s+T+1] with s = ((k*B + i) * T) % (N - T - 1).
Optimiser: torch.optim.AdamW(lr, betas=(0.9, 0.95), eps=1e-8), weight decay 0.1 on tensors
with 2+ dimensions and 0 on the others, clip_grad_norm_ on all parameters each step, constant lr.
"""

import argparse
import json
import math
import os
import shlex
import shutil
import struct
import subprocess
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # must fail, never pass: install-deps installs python3-torch
    print(f"FAIL: cannot import torch with {sys.executable} ({e}). The reference tests need "
          "Debian's python3-torch for /usr/bin/python3; run tools/install-deps.sh.",
          file=sys.stderr)
    sys.exit(1)

TOKEN_MAGIC = 20240520
TOKEN_VERSION = 1

# The comparison's model, data and optimiser: small enough to run in seconds on two cores, large
# enough (B*T = 256 tokens per step) that float32 rounding, which Adam amplifies on gradient
# entries near zero, stays ~7x below WEIGHT_TOL after 20 steps (the selfcheck measures it).
CMP = {"n_layer": 3, "n_head": 4, "n_embd": 64, "vocab_size": 256, "block_size": 64}
CMP_B, CMP_T, CMP_N, CMP_STEPS, CMP_LR = 8, 32, 3000, 20, 1e-3

LOSS_TOL_STEP1 = 1e-5
GRAD_TOL = 1e-5
LOSS_TOL_TRAIN = 1e-4
WEIGHT_TOL = 1e-4
# `compare --dtype bf16`: both sides round every matmul operand to bfloat16 and sum in float32.
# They differ by the order of float32 sums, as in fp32, and through it by the operands whose bf16
# rounding that order flips: one bf16 step (2^-8 relative) on that element, which rounding
# amplifies ~10^4-fold over float32's own differences. The reference measures that noise on
# itself (float32 vs float64, both bf16), so a gradient or final weight must be within a floor
# plus K times its row's noise; losses get fixed tolerances. Measured 2026-11-26 (sim): every
# gradient's error within 0.7-1.2x its noise, the final weights' within 0.8-4.8x (Adam turns
# differences in near-zero gradients into whole updates), losses within 2.3e-5. And bf16 must be
# what is compared: the gradients' errors must add up to under half of their distances to the
# float32 reference's (measured: 0.3 of it).
BF16_TOLS = {"loss1": 1e-4, "grad": 2e-5, "grad_k": 3.0, "loss": 5e-4, "weight": 1e-4,
             "weight_k": 6.0, "vs_fp32": 0.5}


class CheckFailed(Exception):
    pass


# ---- the model ----------------------------------------------------------------------------------

def param_shapes(n_layer, n_embd, vocab_size, block_size):
    """Hugging Face GPT-2 names and shapes, in model order."""
    C = n_embd
    shapes = {
        "transformer.wte.weight": (vocab_size, C),
        "transformer.wpe.weight": (block_size, C),
    }
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        shapes[p + "ln_1.weight"] = (C,)
        shapes[p + "ln_1.bias"] = (C,)
        shapes[p + "attn.c_attn.weight"] = (C, 3 * C)
        shapes[p + "attn.c_attn.bias"] = (3 * C,)
        shapes[p + "attn.c_proj.weight"] = (C, C)
        shapes[p + "attn.c_proj.bias"] = (C,)
        shapes[p + "ln_2.weight"] = (C,)
        shapes[p + "ln_2.bias"] = (C,)
        shapes[p + "mlp.c_fc.weight"] = (C, 4 * C)
        shapes[p + "mlp.c_fc.bias"] = (4 * C,)
        shapes[p + "mlp.c_proj.weight"] = (4 * C, C)
        shapes[p + "mlp.c_proj.bias"] = (C,)
    shapes["transformer.ln_f.weight"] = (C,)
    shapes["transformer.ln_f.bias"] = (C,)
    return shapes


def expected_param_count(n_layer, n_embd, vocab_size, block_size):
    C = n_embd
    return vocab_size * C + block_size * C + n_layer * (12 * C * C + 13 * C) + 2 * C


def init_params(cfg, seed, dtype=torch.float32):
    """GPT-2 style init (N(0, 0.02), residual projections scaled by 1/sqrt(2L), LN 1/0, biases 0).
    Only used by the selfcheck: the comparison starts from Strata's exported weights."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(cfg["n_layer"], cfg["n_embd"], cfg["vocab_size"],
                                    cfg["block_size"]).items():
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")):
            t = torch.ones(shape, dtype=torch.float64)
        elif len(shape) == 1:
            # Non-zero biases so the selfcheck exercises them.
            t = 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)
        else:
            std = 0.02
            if name.endswith("c_proj.weight"):
                std /= math.sqrt(2 * cfg["n_layer"])
            t = std * torch.randn(shape, generator=g, dtype=torch.float64)
        params[name] = t.to(dtype)
    return params


class _Bf16Matmul(torch.autograd.Function):
    """a @ b on operands rounded to bfloat16 (nearest even), summed in the inputs' float type; its
    backward's matmuls round their operands too (the incoming gradient included): --dtype bf16
    as Strata defines it (GEMM operands bf16, accumulation and everything else float32)."""

    @staticmethod
    def forward(ctx, a, b):
        ar, br = _bf16(a), _bf16(b)
        ctx.save_for_backward(ar, br)
        return ar @ br

    @staticmethod
    def backward(ctx, g):
        ar, br = ctx.saved_tensors
        gr = _bf16(g)
        return gr @ br.transpose(-2, -1), ar.transpose(-2, -1) @ gr


def _bf16(t):
    return t.to(torch.bfloat16).to(t.dtype)


def bf16_matmul(a, b):
    """_Bf16Matmul for (..., K) @ (K, N) (a weight: the batch folds into rows, so b's gradient is
    one matrix) and for batched (..., M, K) @ (..., K, N)."""
    if b.dim() == 2:
        out = _Bf16Matmul.apply(a.reshape(-1, a.shape[-1]), b)
        return out.reshape(*a.shape[:-1], b.shape[-1])
    return _Bf16Matmul.apply(a, b)


def gpt2_loss(params, cfg, idx, targets):
    """Mean cross-entropy of the GPT-2 defined by `params` on (idx, targets), both (B, T) int64.
    cfg["matmul"], when set, computes every matmul (bf16_matmul for --dtype bf16)."""
    mm = cfg.get("matmul", torch.matmul)
    B, T = idx.shape
    L, nh, C = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    hs = C // nh
    wte = params["transformer.wte.weight"]
    x = wte[idx] + params["transformer.wpe.weight"][:T]
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for i in range(L):
        p = f"transformer.h.{i}."
        h = F.layer_norm(x, (C,), params[p + "ln_1.weight"], params[p + "ln_1.bias"], eps=1e-5)
        qkv = mm(h, params[p + "attn.c_attn.weight"]) + params[p + "attn.c_attn.bias"]
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, nh, hs).transpose(1, 2)
        k = k.view(B, T, nh, hs).transpose(1, 2)
        v = v.view(B, T, nh, hs).transpose(1, 2)
        att = mm(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = mm(att, v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + (mm(y, params[p + "attn.c_proj.weight"]) + params[p + "attn.c_proj.bias"])
        h = F.layer_norm(x, (C,), params[p + "ln_2.weight"], params[p + "ln_2.bias"], eps=1e-5)
        h = F.gelu(mm(h, params[p + "mlp.c_fc.weight"]) + params[p + "mlp.c_fc.bias"],
                   approximate="tanh")
        x = x + (mm(h, params[p + "mlp.c_proj.weight"]) + params[p + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), params["transformer.ln_f.weight"], params["transformer.ln_f.bias"],
                     eps=1e-5)
    logits = mm(x, wte.t())
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def gpt2_loss_naive(params, cfg, idx, targets):
    """The same function written position by position from the formulas (no F.layer_norm,
    F.gelu, F.softmax or F.cross_entropy), to check gpt2_loss on tiny inputs."""
    B, T = idx.shape
    L, nh, C = cfg["n_layer"], cfg["n_head"], cfg["n_embd"]
    hs = C // nh

    def layernorm(v, w, b):
        mean = v.sum() / C
        var = ((v - mean) ** 2).sum() / C
        return (v - mean) / torch.sqrt(var + 1e-5) * w + b

    def gelu(v):
        return 0.5 * v * (1 + torch.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))

    total = 0
    for b in range(B):
        xs = [params["transformer.wte.weight"][int(idx[b, t])] +
              params["transformer.wpe.weight"][t] for t in range(T)]
        for i in range(L):
            p = f"transformer.h.{i}."
            hs_ = [layernorm(v, params[p + "ln_1.weight"], params[p + "ln_1.bias"]) for v in xs]
            W, bias = params[p + "attn.c_attn.weight"], params[p + "attn.c_attn.bias"]
            qkv = [sum(h[c] * W[c] for c in range(C)) + bias for h in hs_]
            outs = []
            for t in range(T):
                heads = []
                for hd in range(nh):
                    q = qkv[t][hd * hs:(hd + 1) * hs]
                    scores = [torch.dot(q, qkv[j][C + hd * hs:C + (hd + 1) * hs]) / math.sqrt(hs)
                              for j in range(t + 1)]
                    m = max(float(s) for s in scores)
                    e = [torch.exp(s - m) for s in scores]
                    z = sum(e)
                    heads.append(sum(e[j] / z * qkv[j][2 * C + hd * hs:2 * C + (hd + 1) * hs]
                                     for j in range(t + 1)))
                outs.append(torch.cat(heads))
            Wp, bp = params[p + "attn.c_proj.weight"], params[p + "attn.c_proj.bias"]
            xs = [xs[t] + sum(outs[t][c] * Wp[c] for c in range(C)) + bp for t in range(T)]
            Wf, bf = params[p + "mlp.c_fc.weight"], params[p + "mlp.c_fc.bias"]
            Wm, bm = params[p + "mlp.c_proj.weight"], params[p + "mlp.c_proj.bias"]
            new = []
            for v in xs:
                h = layernorm(v, params[p + "ln_2.weight"], params[p + "ln_2.bias"])
                f = gelu(sum(h[c] * Wf[c] for c in range(C)) + bf)
                new.append(v + sum(f[c] * Wm[c] for c in range(4 * C)) + bm)
            xs = new
        for t in range(T):
            h = layernorm(xs[t], params["transformer.ln_f.weight"], params["transformer.ln_f.bias"])
            logits = params["transformer.wte.weight"] @ h
            m = logits.max()
            lse = m + torch.log(torch.exp(logits - m).sum())
            total = total - (logits[int(targets[b, t])] - lse)
    return total / (B * T)


def loss_and_grads(params, cfg, x, y):
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    loss = gpt2_loss(leaves, cfg, x, y)
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in leaves.items()}


def finite_difference_error(loss_fn, params, grads, cfg, x, y, trials=3):
    """The worst relative difference between autograd's `grads` and central finite differences
    of `loss_fn` (float64) along `trials` random directions."""
    worst = 0.0
    for trial in range(trials):
        gd = torch.Generator().manual_seed(100 + trial)
        dirs = {n: torch.randn(p.shape, generator=gd, dtype=torch.float64)
                for n, p in params.items()}
        eps = 1e-6
        plus = loss_fn({n: params[n] + eps * dirs[n] for n in params}, cfg, x, y).item()
        minus = loss_fn({n: params[n] - eps * dirs[n] for n in params}, cfg, x, y).item()
        an = sum((grads[n] * dirs[n]).sum().item() for n in params)
        worst = max(worst, abs((plus - minus) / (2 * eps) - an) / max(abs(an), 1e-12))
    return worst


def rel(a, b):
    """||a - b|| / ||b|` in float64; ||a|| when b is exactly zero."""
    a = a.detach().to(torch.float64)
    b = b.detach().to(torch.float64)
    nb = b.norm().item()
    return (a - b).norm().item() / nb if nb > 0 else a.norm().item()


def weight_parts(name, t, n_embd):
    """The slices of a trained weight to compare. The key third of attn.c_attn.bias has a true
    gradient of exactly zero (softmax ignores a constant added to every score of a row), so
    every float32 implementation moves it by rounding noise that Adam amplifies, differently in
    each: it is split off and only bounded (see compare()); the rest is compared relatively."""
    if name.endswith("attn.c_attn.bias"):
        C = n_embd
        return [(name + " [q,v]", torch.cat([t[:C], t[2 * C:]]), "rel"),
                (name + " [k]", t[C:2 * C], "noise")]
    return [(name, t, "rel")]


# ---- data ---------------------------------------------------------------------------------------

def write_token_file(path, tokens):
    header = [0] * 256
    header[0], header[1], header[2] = TOKEN_MAGIC, TOKEN_VERSION, len(tokens)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack(f"<{len(tokens)}H", *tokens))


def make_tokens(n, vocab_size, seed):
    """Tokens from a fixed skewed distribution, so the loss has something to learn."""
    g = torch.Generator().manual_seed(seed)
    probs = torch.softmax(2.0 * torch.randn(vocab_size, generator=g, dtype=torch.float64), 0)
    return torch.multinomial(probs, n, replacement=True, generator=g).tolist()


def get_batch(tokens, step, B, T):
    N = len(tokens)
    assert N >= T + 2
    xs, ys = [], []
    for i in range(B):
        s = ((step * B + i) * T) % (N - T - 1)
        xs.append(tokens[s:s + T])
        ys.append(tokens[s + 1:s + T + 1])
    return torch.tensor(xs, dtype=torch.int64), torch.tensor(ys, dtype=torch.int64)


# ---- training -----------------------------------------------------------------------------------

def train(params, cfg, tokens, B, T, steps, lr, clip, dtype, loss_fn=None):
    """`steps` AdamW steps from `params` (not modified) of the model `loss_fn` computes (default
    gpt2_loss). Returns (losses, norms, final params)."""
    loss_fn = loss_fn or gpt2_loss
    leaves = {n: p.detach().to(dtype).clone().requires_grad_(True) for n, p in params.items()}
    decay = [p for p in leaves.values() if p.dim() >= 2]
    no_decay = [p for p in leaves.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr, betas=(0.9, 0.95), eps=1e-8)
    losses, norms = [], []
    for k in range(steps):
        x, y = get_batch(tokens, k, B, T)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(leaves, cfg, x, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(list(leaves.values()), clip)
        opt.step()
        losses.append(loss.item())
        norms.append(norm.item())
    return losses, norms, {n: p.detach() for n, p in leaves.items()}


def pick_clip(params, cfg, tokens, dtype, loss_fn=None, steps=CMP_STEPS, margin=3):
    """A clip norm under which some but not all of `steps` steps clip (at least `margin` of each),
    taken from the unclipped run's gradient norms. Returns (clip, n_clipped, losses, norms, final
    params) of the clipped run."""
    _, free, _ = train(params, cfg, tokens, CMP_B, CMP_T, steps, CMP_LR, float("inf"), dtype,
                       loss_fn)
    ordered = sorted(free)
    for q in (0.5, 0.35, 0.65, 0.2, 0.8):
        clip = float(f"{ordered[int(q * (steps - 1))]:.3g}")
        losses, norms, final = train(params, cfg, tokens, CMP_B, CMP_T, steps, CMP_LR, clip,
                                     dtype, loss_fn)
        n_clipped = sum(1 for nm in norms if nm > clip)
        if margin <= n_clipped <= steps - margin:
            return clip, n_clipped, losses, norms, final
    raise CheckFailed(f"could not pick a clip norm that clips only some steps (unclipped norms "
                      f"{[round(n, 4) for n in free]})")


# ---- safetensors (an independent reader: json + struct) -----------------------------------------

def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise CheckFailed(f"{path}: {len(data)} bytes, not a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if 8 + n > len(data):
        raise CheckFailed(f"{path}: header length {n} exceeds the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    body = memoryview(data)[8 + n:]
    tensors = {}
    for name, e in header.items():
        if e["dtype"] != "F32":
            raise CheckFailed(f"{path}: tensor {name} is {e['dtype']}, expected F32")
        b, end = e["data_offsets"]
        numel = math.prod(e["shape"])
        if not (0 <= b <= end <= len(body)) or end - b != 4 * numel:
            raise CheckFailed(f"{path}: tensor {name}: bad data_offsets {e['data_offsets']} for "
                              f"shape {e['shape']} (data section {len(body)} bytes)")
        t = torch.frombuffer(bytearray(body[b:end]), dtype=torch.float32) if numel else \
            torch.zeros(0, dtype=torch.float32)
        tensors[name] = t.reshape(e["shape"])
    return meta, tensors


# ---- output -------------------------------------------------------------------------------------

def print_table(title, header, rows):
    print(f"\n{title}")
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print("  " + line.format(*header))
    print("  " + "  ".join("-" * w for w in widths))
    for r in rows:
        print("  " + line.format(*[str(c) for c in r]))


def fmt(x):
    return f"{x:.2e}"


# ---- selfcheck ----------------------------------------------------------------------------------

def selfcheck():
    """Raises CheckFailed if this file's reference model is wrong."""
    failures = []
    print("== selfcheck of the PyTorch reference model (no Strata) ==")

    # 1. Names, shapes and the parameter count formula.
    for L, C, V, maxT in [(2, 32, 256, 64), (3, 48, 97, 16), (12, 768, 50257, 1024)]:
        shapes = param_shapes(L, C, V, maxT)
        count = sum(math.prod(s) for s in shapes.values())
        want = expected_param_count(L, C, V, maxT)
        ok = count == want and len(shapes) == 2 + 12 * L + 2
        print(f"  param count L={L} C={C} V={V} T={maxT}: {count} "
              f"(12*L*C^2 + 13*L*C + (V+T)*C + 2C = {want}) {'ok' if ok else 'MISMATCH'}")
        if not ok:
            failures.append(f"parameter count {count} != {want} for L={L} C={C}")
    if expected_param_count(12, 768, 50257, 1024) != 124439808:
        failures.append("GPT-2 small should have 124439808 parameters")

    # 2. Vectorised model vs the naive loops, float64.
    cfg = {"n_layer": 2, "n_head": 2, "n_embd": 8, "vocab_size": 11, "block_size": 7}
    params = init_params(cfg, seed=7, dtype=torch.float64)
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 11, (2, 5), generator=g)
    y = torch.randint(0, 11, (2, 5), generator=g)
    loss, grads = loss_and_grads(params, cfg, x, y)
    leaves = {n: p.clone().requires_grad_(True) for n, p in params.items()}
    naive = gpt2_loss_naive(leaves, cfg, x, y)
    naive.backward()
    d_loss = abs(loss.item() - naive.item()) / abs(naive.item())
    d_grad = max(rel(grads[n], leaves[n].grad) for n in params)
    print(f"  vectorised vs naive float64 model: loss rel {fmt(d_loss)}, worst grad rel "
          f"{fmt(d_grad)} (tolerance 1e-10)")
    if d_loss > 1e-10 or d_grad > 1e-10:
        failures.append(f"vectorised model differs from the naive one (loss {d_loss}, "
                        f"grad {d_grad})")
    # Rows T..block_size-1 of wpe get no gradient.
    if grads["transformer.wpe.weight"][5:].abs().max().item() != 0:
        failures.append("wpe rows beyond T received gradient")

    # 3. Autograd vs central finite differences along random directions, float64.
    worst_fd = finite_difference_error(gpt2_loss, params, grads, cfg, x, y)
    print(f"  autograd vs finite differences (3 random directions): worst rel {fmt(worst_fd)} "
          f"(tolerance 1e-6)")
    if worst_fd > 1e-6:
        failures.append(f"autograd disagrees with finite differences ({worst_fd})")

    # 4. The noise floor: float32 vs float64 on the comparison's configuration.
    cfg = dict(CMP)
    params = init_params(cfg, seed=11, dtype=torch.float64)
    tokens = make_tokens(CMP_N, cfg["vocab_size"], seed=5)
    x, y = get_batch(tokens, 0, CMP_B, CMP_T)
    l64, g64 = loss_and_grads(params, cfg, x, y)
    l32, g32 = loss_and_grads({n: p.float() for n, p in params.items()}, cfg, x, y)
    d_loss = abs(l32.item() - l64.item()) / abs(l64.item())
    d_grad = max(rel(g32[n], g64[n]) for n in params)
    print(f"  float32 vs float64, step 1: loss rel {fmt(d_loss)}, worst grad rel {fmt(d_grad)} "
          f"(must stay well below the {GRAD_TOL:g} the comparison uses)")
    if d_loss > GRAD_TOL / 4 or d_grad > GRAD_TOL / 4:
        failures.append(f"float32 noise ({d_loss}, {d_grad}) too close to the tolerance")
    if abs(l64.item() - math.log(cfg["vocab_size"])) > 0.2:
        failures.append(f"initial loss {l64.item()} is far from ln(V) = "
                        f"{math.log(cfg['vocab_size'])}")
    clip, n_clipped, losses64, norms, w64 = pick_clip(params, cfg, tokens, torch.float64)
    losses32, _, w32 = train(params, cfg, tokens, CMP_B, CMP_T, CMP_STEPS, CMP_LR, clip,
                             torch.float32)
    d_losses = max(abs(a - b) / abs(b) for a, b in zip(losses32, losses64))
    d_w, worst = max((rel(a, b), label)
                     for n in params
                     for (label, a, kind), (_, b, _) in zip(weight_parts(n, w32[n], cfg["n_embd"]),
                                                            weight_parts(n, w64[n], cfg["n_embd"]))
                     if kind == "rel")
    print(f"  float32 vs float64, {CMP_STEPS} AdamW steps (clip {clip:g}, {n_clipped} clipped): "
          f"worst loss rel {fmt(d_losses)}, worst weight rel {fmt(d_w)} ({worst}); the comparison "
          f"allows {LOSS_TOL_TRAIN:g} and {WEIGHT_TOL:g}")
    if d_losses > LOSS_TOL_TRAIN / 4 or d_w > WEIGHT_TOL / 4:
        failures.append(f"float32 training noise ({d_losses}, {d_w}) too close to the tolerance")
    print(f"  losses over {CMP_STEPS} steps: {losses64[0]:.4f} -> {losses64[-1]:.4f}")
    if not losses64[-1] < losses64[0] - 0.2:
        failures.append(f"{CMP_STEPS} steps of training did not lower the loss")

    if failures:
        raise CheckFailed("reference model selfcheck: " + "; ".join(failures))
    print("  selfcheck passed")


# ---- comparison with Strata ---------------------------------------------------------------------

class Strata:
    def __init__(self, binary, workdir, shape_flags):
        self.binary = binary
        self.workdir = workdir
        self.shape_flags = shape_flags

    def train(self, what, extra):
        cmd = [self.binary, "train"] + self.shape_flags + extra
        print(f"\n[{what}] $ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=self.workdir)
        except FileNotFoundError:
            raise CheckFailed(f"{what}: the strata binary {self.binary} does not exist; build the "
                              "'strata' target first")
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"{what}: strata train did not finish in 900 s")
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
        if r.returncode != 0:
            raise CheckFailed(f"{what}: strata train exited with status {r.returncode}:\n{tail}")
        print(f"  ok in {time.time() - t0:.1f} s")
        return r


def read_log(path, what):
    """{step: record} from a --log-json file (lines without both step and loss are ignored)."""
    if not os.path.exists(path):
        raise CheckFailed(f"{what}: --log-json file {path} was not written")
    losses = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise CheckFailed(f"{what}: {path} line {n} is not JSON ({e}): {line[:120]}")
            if isinstance(obj, dict) and "step" in obj and "loss" in obj:
                losses[int(obj["step"])] = obj
    return losses


def check_names(path, tensors, shapes, what, allow_tied_head):
    extra = sorted(set(tensors) - set(shapes))
    if allow_tied_head and "lm_head.weight" in extra:
        if not torch.equal(tensors["lm_head.weight"], tensors.get("transformer.wte.weight")):
            raise CheckFailed(f"{what}: {path} has an lm_head.weight that differs from wte")
        extra.remove("lm_head.weight")
    missing = sorted(set(shapes) - set(tensors))
    wrong = sorted(n for n in shapes if n in tensors and tuple(tensors[n].shape) != shapes[n])
    if missing or extra or wrong:
        raise CheckFailed(
            f"{what}: {path} does not hold Hugging Face GPT-2 names and shapes:"
            + (f"\n  missing: {missing}" if missing else "")
            + (f"\n  unexpected: {extra}" if extra else "")
            + "".join(f"\n  {n}: shape {tuple(tensors[n].shape)}, expected {shapes[n]}"
                      for n in wrong))


def compare(args):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    selfcheck()

    # The comparison's model and data (small enough to run in seconds on two cores).
    L, H, C = CMP["n_layer"], CMP["n_head"], CMP["n_embd"]
    V, maxT = CMP["vocab_size"], CMP["block_size"]
    B, T, N, steps, lr, seed = CMP_B, CMP_T, CMP_N, CMP_STEPS, CMP_LR, 1234
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    tokens = make_tokens(N, V, seed=99)
    data = os.path.join(workdir, "tokens.bin")
    write_token_file(data, tokens)
    print(f"\n== Strata vs PyTorch: n_layer {L}, n_head {H}, n_embd {C}, vocab {V}, "
          f"block {maxT}; batch {B} x seq {T}; {N} tokens in {data} ==")
    shape_flags = ["--model", "tiny", "--n-layer", str(L), "--n-head", str(H), "--n-embd", str(C),
                   "--vocab", str(V), "--block-size", str(maxT), "--seq", str(T),
                   "--batch", str(B), "--data", data, "--seed", str(seed),
                   "--lr-schedule", "constant", "--warmup", "0", "--weight-decay", "0.1",
                   "--beta1", "0.9", "--beta2", "0.95", "--eps", "1e-8",
                   "--device", args.device, "--dtype", args.dtype]
    strata = Strata(args.strata, workdir, shape_flags)
    failures = []

    # 1. Initial weights.
    w0_path = os.path.join(workdir, "w0.safetensors")
    strata.train("initial weights", ["--steps", "0", "--export", w0_path])
    meta, w0 = read_safetensors(w0_path)
    want_meta = {"n_layer": L, "n_head": H, "n_embd": C, "vocab_size": V, "block_size": maxT}
    bad_meta = {k: meta.get(k) for k, v in want_meta.items() if str(meta.get(k)) != str(v)}
    if bad_meta:
        raise CheckFailed(f"{w0_path}: __metadata__ {meta} does not give the model shape "
                          f"{want_meta} (wrong: {bad_meta})")
    cfg = dict(want_meta)
    cfg["block_size"] = int(meta["block_size"])
    if args.dtype == "bf16":
        cfg["matmul"] = bf16_matmul
    bf16 = args.dtype == "bf16"
    t = BF16_TOLS
    loss_tol_step1, grad_tol, loss_tol_train, weight_tol = (
        (t["loss1"], t["grad"], t["loss"], t["weight"]) if bf16 else
        (LOSS_TOL_STEP1, GRAD_TOL, LOSS_TOL_TRAIN, WEIGHT_TOL))
    grad_k, weight_k = (t["grad_k"], t["weight_k"]) if bf16 else (0.0, 0.0)
    shapes = param_shapes(L, C, V, cfg["block_size"])
    check_names(w0_path, w0, shapes, "initial weights", allow_tied_head=True)
    params = {n: w0[n] for n in shapes}
    count = sum(p.numel() for p in params.values())
    print(f"  {len(params)} tensors, {count} parameters "
          f"(formula {expected_param_count(L, C, V, cfg['block_size'])}), metadata {meta}")

    # 2. Step 1: loss and gradients.
    g_path = os.path.join(workdir, "grads.safetensors")
    l1_path = os.path.join(workdir, "step1.jsonl")
    strata.train("step 1 gradients", ["--steps", "1", "--grad-clip", "1.0", "--lr", str(lr),
                                      "--export-grads", g_path, "--log-json", l1_path])
    _, grads = read_safetensors(g_path)
    check_names(g_path, grads, shapes, "gradients", allow_tied_head=False)
    x, y = get_batch(tokens, 0, B, T)
    loss32, ref32 = loss_and_grads(params, cfg, x, y)
    loss64, ref64 = loss_and_grads({n: p.double() for n, p in params.items()}, cfg, x, y)
    log1 = read_log(l1_path, "step 1")
    if 1 not in log1:
        raise CheckFailed(f"step 1: {l1_path} has no line with step 1 and its loss")
    rows = []
    s1 = float(log1[1]["loss"])
    d = abs(s1 - loss32.item()) / abs(loss32.item())
    ok = d <= loss_tol_step1
    rows.append(["loss", "()", f"{loss32.item():.6f}", f"{s1:.6f}", fmt(d),
                 fmt(abs(loss32.item() - loss64.item()) / abs(loss64.item())),
                 f"{loss_tol_step1:g}", "ok" if ok else "FAIL"])
    if not ok:
        failures.append(f"step 1 loss: strata {s1} vs torch {loss32.item()} (rel {d:.2e})")
    for n in shapes:
        d, noise = rel(grads[n], ref32[n]), rel(ref32[n], ref64[n])
        tol = grad_tol + grad_k * noise
        ok = d <= tol
        rows.append([n, str(tuple(shapes[n])), fmt(ref32[n].norm().item()),
                     fmt(grads[n].norm().item()), fmt(d), fmt(noise), fmt(tol),
                     "ok" if ok else "FAIL"])
        if not ok:
            failures.append(f"gradient of {n}: rel {d:.2e} > {tol:.2e}")
    print_table("Step 1: loss and gradients (||strata - torch|| / ||torch||, torch float32; "
                "'f32 noise' = torch float32 vs float64)",
                ["tensor", "shape", "torch (norm)", "strata (norm)", "rel err", "f32 noise",
                 "tol", ""], rows)

    if bf16:
        failures += check_is_bf16(grads, ref32, params, cfg, x, y, shapes)

    # 3. 20 steps with clipping. Pick the clip norm from the reference's own gradient norms so
    # that some steps clip and some don't; check that the chosen run really does both.
    clip, n_clipped, losses, norms, w20 = pick_clip(params, cfg, tokens, torch.float32)
    losses64, _, w20_64 = train(params, cfg, tokens, B, T, steps, lr, clip, torch.float64)
    print(f"\n  grad-clip {clip:g}: the reference clips {n_clipped} of {steps} steps "
          f"(norms {min(norms):.3f} .. {max(norms):.3f})")
    w20_path = os.path.join(workdir, "w20.safetensors")
    log_path = os.path.join(workdir, "train.jsonl")
    strata.train(f"{steps} steps", ["--steps", str(steps), "--grad-clip", repr(clip),
                                    "--lr", str(lr), "--log-json", log_path,
                                    "--export", w20_path])
    log = read_log(log_path, f"{steps} steps")
    rows = []
    for k in range(steps):
        step = k + 1
        rec = log.get(step, {})
        s = float(rec["loss"]) if "loss" in rec else None
        strata_norm = rec.get("grad_norm")
        d = abs(s - losses[k]) / abs(losses[k]) if s is not None else float("inf")
        ok = d <= loss_tol_train
        rows.append([step, f"{losses[k]:.6f}", "missing" if s is None else f"{s:.6f}", fmt(d),
                     fmt(abs(losses[k] - losses64[k]) / abs(losses64[k])),
                     f"{norms[k]:.4f}", "-" if strata_norm is None else f"{float(strata_norm):.4f}",
                     "yes" if norms[k] > clip else "no", "ok" if ok else "FAIL"])
        if not ok:
            failures.append(f"step {step} loss: strata {s} vs torch {losses[k]} (rel {d:.2e})")
    print_table(f"{steps} steps, AdamW lr {lr:g}, grad-clip {clip:g}: losses (tolerance "
                f"{loss_tol_train:g} relative)",
                ["step", "torch loss", "strata loss", "rel err", "f32 noise", "torch norm",
                 "strata norm", "clipped", ""], rows)
    _, w20s = read_safetensors(w20_path)
    check_names(w20_path, w20s, shapes, "final weights", allow_tied_head=True)
    rows = []
    noise_bound = 2 * steps * lr  # |Adam update| stays below ~lr per step
    for n in shapes:
        parts = zip(weight_parts(n, w20s[n], C), weight_parts(n, w20[n], C),
                    weight_parts(n, params[n], C), weight_parts(n, w20_64[n], C))
        for (label, a, kind), (_, b, _), (_, b0, _), (_, b64, _) in parts:
            if kind == "rel":
                d, noise = rel(a, b), rel(b, b64)
                tol = weight_tol + weight_k * noise
                ok = d <= tol
                rows.append([label, fmt(b.norm().item()), fmt(rel(b, b0)), fmt(d),
                             fmt(noise), fmt(tol), "ok" if ok else "FAIL"])
                if not ok:
                    failures.append(f"final weight {label}: rel {d:.2e} > {tol:.2e}")
            else:
                d = (a.double() - b0.double()).abs().max().item()
                ok = d <= noise_bound
                rows.append([label + " (zero true grad)", fmt(b.norm().item()), "-",
                             f"max|moved| {d:.1e}", "-", f"{noise_bound:g} abs",
                             "ok" if ok else "FAIL"])
                if not ok:
                    failures.append(f"final weight {label}: moved {d:.2e} from W0 although its "
                                    f"true gradient is zero (bound {noise_bound:g})")
    print_table(f"Weights after {steps} steps ('moved' = how far the reference moved from W0)",
                ["tensor", "torch (norm)", "moved", "rel err", "f32 noise", "tol", ""], rows)

    # 4. Importing the exported weights reproduces the gradients bit for bit.
    g2_path = os.path.join(workdir, "grads_from_init.safetensors")
    strata.train("import round trip", ["--init", w0_path, "--steps", "1", "--grad-clip", "1.0",
                                       "--lr", str(lr), "--export-grads", g2_path])
    _, grads2 = read_safetensors(g2_path)
    differ = [n for n in shapes if n not in grads2 or not torch.equal(grads2[n], grads[n])]
    print(f"\n--init {os.path.basename(w0_path)} gives bit-identical step-1 gradients: "
          f"{'yes' if not differ else 'NO'}")
    if differ:
        failures.append(f"--init from the exported weights changes the gradients of {differ}")

    print()
    if failures:
        raise CheckFailed(f"{len(failures)} comparison(s) failed:\n  " + "\n  ".join(failures))
    within = (f" (+ {grad_k:g}x and {weight_k:g}x each row's own noise)" if grad_k or weight_k
              else "")
    print(f"PASS{' (--dtype bf16)' if bf16 else ''}: loss and {len(shapes)} gradients to "
          f"{grad_tol:g}, {steps} losses to {loss_tol_train:g} and final weights to "
          f"{weight_tol:g}{within} ({n_clipped} of {steps} steps clipped)")


def check_is_bf16(grads, ref, params, cfg, x, y, shapes):
    """--dtype bf16: Strata's step-1 gradients must be nearer the bf16 reference's than the float32
    reference's are (the sum of their errors under BF16_TOLS["vs_fp32"] of the sum of the
    distances), or bf16 was not what ran. Returns the failures."""
    _, ref_fp32 = loss_and_grads(params, {k: v for k, v in cfg.items() if k != "matmul"}, x, y)
    err = sum(rel(grads[n], ref[n]) for n in shapes)
    apart = sum(rel(ref_fp32[n], ref[n]) for n in shapes)
    limit = BF16_TOLS["vs_fp32"]
    print(f"\n  bf16: the gradients' errors add up to {err:.3e}, {err / apart:.2f} of their "
          f"distances to the float32 reference's ({apart:.3e}; must be under {limit:g})")
    if err < limit * apart:
        return []
    return [f"--dtype bf16: strata's gradients are {err / apart:.2f} of the way to the float32 "
            f"reference's (must be under {limit:g}): the matmuls do not round like bf16"]


def has_gpu():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("selfcheck", help="check the reference model on its own")
    c = sub.add_parser("compare", help="compare strata train with the reference")
    c.add_argument("--strata", required=True, help="path of the strata binary")
    c.add_argument("--workdir", required=True, help="scratch directory (recreated)")
    c.add_argument("--device", default="sim", choices=["sim", "cuda"],
                   help="strata's device backend (the gpu label runs this with cuda)")
    c.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="strata's --dtype; bf16 rounds the reference's matmul operands too")
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]} ({sys.executable}), torch {torch.__version__}")
    try:
        if args.command == "compare" and args.device == "cuda" and not has_gpu():
            print("SKIP: no NVIDIA GPU (nvidia-smi lists none); the cuda comparison runs in the "
                  "gpu label on a GPU machine")
            return 77
        if args.command == "selfcheck":
            torch.set_num_threads(1)
            selfcheck()
        else:
            compare(args)
    except CheckFailed as e:
        print(f"\nFAIL: {e}", file=sys.stderr)
        sys.stdout.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
