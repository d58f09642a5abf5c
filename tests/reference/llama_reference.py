#!/usr/bin/python3
"""PyTorch reference for Strata's LLaMA (issue 33's exactness): the same checks as
gpt2_reference.py, on a LLaMA written here from Hugging Face's LlamaForCausalLM semantics.

  llama_reference.py selfcheck
      This file's LLaMA on its own: parameter names and count, autograd against finite
      differences (float64), and float32 against float64 on the comparison's configuration (the
      noise floor under the tolerances).

  llama_reference.py compare --strata BIN --workdir DIR [--tied] [--dtype fp32|bf16]
      Runs the selfcheck, then drives `strata train --arch llama` on a token file written here:
        1. `--steps 0 --export W0`: Hugging Face names and shapes of the initial weights (the
           reference starts from them);
        2. `--steps 1 --export-grads G`: step 1's loss and every gradient to 1e-5 relative;
        3. `--steps 10 --grad-clip C --export W10`: every loss to 1e-5 relative and the final
           weights to 1e-4, with C chosen so that some steps clip and some don't;
        4. W0 written as a Hugging Face directory (config.json + model.safetensors) and given
           to `--init`: `--steps 0 --export` gives W0 back bit for bit, and `--steps 1
           --export-grads` gives step 2's gradients bit for bit.
      --dtype bf16 compares with matmuls whose operands are rounded to bf16 (gpt2_reference.py's
      bf16 rule and tolerances).

The model, from the Hugging Face semantics (never from Strata's code): pre-norm RMSNorm
x * rsqrt(mean(x^2) + eps) * w; q/k/v/o projections without biases, stored (out, in) as
nn.Linear stores them; grouped-query attention (kv head j serves query heads j*g .. j*g+g-1, g =
n_head / n_kv_head); rotary embeddings in the rotate-half form with inv_freq computed in float32
as Hugging Face does; a SwiGLU MLP down(silu(gate(x)) * up(x)); a final RMSNorm; logits by
lm_head, or by embed_tokens when tied; mean cross-entropy. Batches and the optimiser are
gpt2_reference.py's (AdamW betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on 2-D tensors).
"""

import argparse
import json
import math
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as ref  # noqa: E402  (the shared data, safetensors and output helpers)
from gpt2_reference import CheckFailed, fmt, rel  # noqa: E402

torch = ref.torch
F = ref.F

# The comparison: grouped-query attention (2 kv heads for 4 query heads), small enough to run in
# seconds on two cores.
CMP = {"n_layer": 2, "n_head": 4, "n_kv_head": 2, "n_embd": 64, "ffn_dim": 128,
       "vocab_size": 256, "block_size": 64, "rope_theta": 10000.0, "norm_eps": 1e-5}
CMP_B, CMP_T, CMP_N, CMP_STEPS, CMP_LR = 8, 32, 3000, 10, 1e-3
LOSS_TOL_STEP1 = 1e-5
GRAD_TOL = 1e-5
LOSS_TOL_TRAIN = 1e-5
WEIGHT_TOL = 1e-4


def param_shapes(cfg):
    """Hugging Face LlamaForCausalLM names and shapes, in model order."""
    C, F_, V = cfg["n_embd"], cfg["ffn_dim"], cfg["vocab_size"]
    KV = cfg["n_kv_head"] * (C // cfg["n_head"])
    shapes = {"model.embed_tokens.weight": (V, C)}
    for i in range(cfg["n_layer"]):
        p = f"model.layers.{i}."
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "self_attn.q_proj.weight"] = (C, C)
        shapes[p + "self_attn.k_proj.weight"] = (KV, C)
        shapes[p + "self_attn.v_proj.weight"] = (KV, C)
        shapes[p + "self_attn.o_proj.weight"] = (C, C)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
        shapes[p + "mlp.gate_proj.weight"] = (F_, C)
        shapes[p + "mlp.up_proj.weight"] = (F_, C)
        shapes[p + "mlp.down_proj.weight"] = (C, F_)
    shapes["model.norm.weight"] = (C,)
    if not cfg.get("tied"):
        shapes["lm_head.weight"] = (V, C)
    return shapes


def init_params(cfg, seed, dtype):
    """normal(0, 0.02) for the linears and the embedding; norms near one (perturbed, so the
    selfcheck exercises their gradients). Only the selfcheck uses it."""
    g = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in param_shapes(cfg).items():
        t = 0.02 * torch.randn(shape, generator=g, dtype=torch.float64)
        params[name] = (t + 1.0 if len(shape) == 1 else t).to(dtype)
    return params


def rope_cos_sin(T, hd, theta, dtype):
    """Hugging Face's LlamaRotaryEmbedding: inv_freq and the angles in float32, then cast."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.arange(T, dtype=torch.float32)[:, None] @ inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rmsnorm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def llama_loss(params, cfg, idx, targets):
    mm = cfg.get("matmul", torch.matmul)
    B, T = idx.shape
    C, nh, nkv = cfg["n_embd"], cfg["n_head"], cfg["n_kv_head"]
    hd, eps = C // nh, cfg["norm_eps"]
    emb = params["model.embed_tokens.weight"]
    cos, sin = rope_cos_sin(T, hd, cfg["rope_theta"], emb.dtype)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = emb[idx]

    def linear(v, name):
        return mm(v, params[name].t())

    for i in range(cfg["n_layer"]):
        p = f"model.layers.{i}."
        h = rmsnorm(x, params[p + "input_layernorm.weight"], eps)
        q = linear(h, p + "self_attn.q_proj.weight").view(B, T, nh, hd).transpose(1, 2)
        k = linear(h, p + "self_attn.k_proj.weight").view(B, T, nkv, hd).transpose(1, 2)
        v = linear(h, p + "self_attn.v_proj.weight").view(B, T, nkv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)
        v = v.repeat_interleave(nh // nkv, dim=1)
        att = mm(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = mm(att, v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + linear(y, p + "self_attn.o_proj.weight")
        h = rmsnorm(x, params[p + "post_attention_layernorm.weight"], eps)
        m = F.silu(linear(h, p + "mlp.gate_proj.weight")) * linear(h, p + "mlp.up_proj.weight")
        x = x + linear(m, p + "mlp.down_proj.weight")
    x = rmsnorm(x, params["model.norm.weight"], eps)
    head = emb if cfg.get("tied") else params["lm_head.weight"]
    logits = mm(x, head.t())
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))


def loss_and_grads(params, cfg, x, y):
    leaves = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    loss = llama_loss(leaves, cfg, x, y)
    loss.backward()
    return loss.detach(), {n: p.grad.detach().clone() for n, p in leaves.items()}


def train(params, cfg, tokens, steps, clip, dtype):
    """`steps` AdamW steps of this LLaMA (gpt2_reference.py's loop and optimiser)."""
    return ref.train(params, cfg, tokens, CMP_B, CMP_T, steps, CMP_LR, clip, dtype, llama_loss)


def pick_clip(params, cfg, tokens):
    """A clip norm under which some but not all steps clip (gpt2_reference.py's choice)."""
    return ref.pick_clip(params, cfg, tokens, torch.float32, llama_loss, CMP_STEPS, margin=2)


def selfcheck(tied):
    failures = []
    print(f"== selfcheck of the PyTorch LLaMA ({'tied' if tied else 'untied'}; no Strata) ==")
    # 1. The parameter count against Hugging Face's published TinyLlama-1.1B.
    tiny = {"n_layer": 22, "n_head": 32, "n_kv_head": 4, "n_embd": 2048, "ffn_dim": 5632,
            "vocab_size": 32000}
    count = sum(math.prod(s) for s in param_shapes(tiny).values())
    print(f"  TinyLlama-1.1B's shapes hold {count} parameters (published: 1100048384)")
    if count != 1100048384:
        failures.append(f"TinyLlama-1.1B parameter count {count} != 1100048384")
    # 2. Autograd against central finite differences, float64.
    cfg = {"n_layer": 2, "n_head": 4, "n_kv_head": 2, "n_embd": 8, "ffn_dim": 12,
           "vocab_size": 11, "block_size": 7, "rope_theta": 10000.0, "norm_eps": 1e-5,
           "tied": tied}
    params = init_params(cfg, 7, torch.float64)
    g = torch.Generator().manual_seed(3)
    x = torch.randint(0, 11, (2, 5), generator=g)
    y = torch.randint(0, 11, (2, 5), generator=g)
    _, grads = loss_and_grads(params, cfg, x, y)
    worst = ref.finite_difference_error(llama_loss, params, grads, cfg, x, y)
    print(f"  autograd vs finite differences: worst rel {fmt(worst)} (tolerance 1e-6)")
    if worst > 1e-6:
        failures.append(f"autograd disagrees with finite differences ({worst})")
    # 3. The noise floor: float32 against float64 on the comparison's configuration.
    cfg = dict(CMP, tied=tied)
    params = init_params(cfg, 11, torch.float64)
    tokens = ref.make_tokens(CMP_N, cfg["vocab_size"], seed=5)
    x, y = ref.get_batch(tokens, 0, CMP_B, CMP_T)
    l64, g64 = loss_and_grads(params, cfg, x, y)
    l32, g32 = loss_and_grads({n: p.float() for n, p in params.items()}, cfg, x, y)
    d_loss = abs(l32.item() - l64.item()) / abs(l64.item())
    d_grad = max(rel(g32[n], g64[n]) for n in params)
    print(f"  float32 vs float64, step 1: loss rel {fmt(d_loss)}, worst grad rel {fmt(d_grad)} "
          f"(the comparison allows {GRAD_TOL:g})")
    if d_loss > GRAD_TOL / 4 or d_grad > GRAD_TOL / 4:
        failures.append(f"float32 noise ({d_loss}, {d_grad}) too close to the tolerance")
    if failures:
        raise CheckFailed("LLaMA reference selfcheck: " + "; ".join(failures))
    print("  selfcheck passed")


def write_hf_directory(path, cfg, w0_path):
    """W0 as a Hugging Face model directory: config.json and model.safetensors."""
    os.makedirs(path, exist_ok=True)
    shutil.copyfile(w0_path, os.path.join(path, "model.safetensors"))
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": cfg["n_embd"], "intermediate_size": cfg["ffn_dim"],
              "num_attention_heads": cfg["n_head"], "num_key_value_heads": cfg["n_kv_head"],
              "num_hidden_layers": cfg["n_layer"], "rms_norm_eps": cfg["norm_eps"],
              "rope_theta": cfg["rope_theta"], "vocab_size": cfg["vocab_size"],
              "max_position_embeddings": cfg["block_size"], "hidden_act": "silu",
              "tie_word_embeddings": bool(cfg.get("tied")), "torch_dtype": "float32"}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def check_names(path, tensors, shapes, what):
    missing = sorted(set(shapes) - set(tensors))
    extra = sorted(set(tensors) - set(shapes))
    wrong = sorted(n for n in shapes if n in tensors and tuple(tensors[n].shape) != shapes[n])
    if missing or extra or wrong:
        raise CheckFailed(f"{what}: {path} does not hold Hugging Face LLaMA names and shapes: "
                          f"missing {missing}, unexpected {extra}, wrong shapes {wrong}")


def compare_losses(log, losses, losses64, norms, clip, tol, failures):
    rows = []
    for k, want in enumerate(losses):
        rec = log.get(k + 1, {})
        got = float(rec["loss"]) if "loss" in rec else None
        d = abs(got - want) / abs(want) if got is not None else float("inf")
        ok = d <= tol
        rows.append([k + 1, f"{want:.7f}", "missing" if got is None else f"{got:.7f}", fmt(d),
                     fmt(abs(want - losses64[k]) / abs(losses64[k])), f"{norms[k]:.4f}",
                     "yes" if norms[k] > clip else "no", "ok" if ok else "FAIL"])
        if not ok:
            failures.append(f"step {k + 1} loss: strata {got} vs torch {want} (rel {d:.2e})")
    ref.print_table(f"{len(losses)} steps, grad-clip {clip:g}: losses (tolerance {tol:g})",
                    ["step", "torch loss", "strata loss", "rel err", "f32 noise", "torch norm",
                     "clipped", ""], rows)


def compare(args):
    torch.set_num_threads(1)
    tied = args.tied
    selfcheck(tied)
    cfg = dict(CMP, tied=tied)
    bf16 = args.dtype == "bf16"
    if bf16:
        cfg["matmul"] = ref.bf16_matmul
    t = ref.BF16_TOLS
    loss1_tol, grad_tol, loss_tol, weight_tol = (
        (t["loss1"], t["grad"], t["loss"], t["weight"]) if bf16 else
        (LOSS_TOL_STEP1, GRAD_TOL, LOSS_TOL_TRAIN, WEIGHT_TOL))
    grad_k, weight_k = (t["grad_k"], t["weight_k"]) if bf16 else (0.0, 0.0)
    workdir = os.path.abspath(args.workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    tokens = ref.make_tokens(CMP_N, cfg["vocab_size"], seed=99)
    data = os.path.join(workdir, "tokens.bin")
    ref.write_token_file(data, tokens)
    print(f"\n== Strata vs PyTorch LLaMA ({'tied' if tied else 'untied'}, {args.dtype}): {CMP}; "
          f"batch {CMP_B} x seq {CMP_T} ==")
    flags = ["--arch", "llama", "--model", "llama-tiny", "--n-layer", str(cfg["n_layer"]),
             "--n-head", str(cfg["n_head"]), "--n-kv-head", str(cfg["n_kv_head"]),
             "--n-embd", str(cfg["n_embd"]), "--ffn-dim", str(cfg["ffn_dim"]),
             "--vocab", str(cfg["vocab_size"]), "--block-size", str(cfg["block_size"]),
             "--rope-theta", repr(cfg["rope_theta"]), "--norm-eps", repr(cfg["norm_eps"]),
             "--seq", str(CMP_T), "--batch", str(CMP_B), "--data", data, "--seed", "1234",
             "--lr", str(CMP_LR), "--lr-schedule", "constant", "--warmup", "0",
             "--weight-decay", "0.1", "--beta1", "0.9", "--beta2", "0.95", "--eps", "1e-8",
             "--device", args.device, "--dtype", args.dtype]
    if tied:
        flags.append("--tie-embeddings")
    strata = ref.Strata(args.strata, workdir, flags)
    failures = []
    shapes = param_shapes(cfg)

    # 1. The initial weights.
    w0_path = os.path.join(workdir, "w0.safetensors")
    strata.train("initial weights", ["--steps", "0", "--export", w0_path])
    _, w0 = ref.read_safetensors(w0_path)
    check_names(w0_path, w0, shapes, "initial weights")
    params = {n: w0[n] for n in shapes}

    # 2. Step 1's loss and gradients.
    g_path = os.path.join(workdir, "grads.safetensors")
    l1_path = os.path.join(workdir, "step1.jsonl")
    strata.train("step 1 gradients", ["--steps", "1", "--export-grads", g_path,
                                      "--log-json", l1_path])
    _, grads = ref.read_safetensors(g_path)
    check_names(g_path, grads, shapes, "gradients")
    x, y = ref.get_batch(tokens, 0, CMP_B, CMP_T)
    loss32, ref32 = loss_and_grads(params, cfg, x, y)
    _, ref64 = loss_and_grads({n: p.double() for n, p in params.items()}, cfg, x, y)
    log1 = ref.read_log(l1_path, "step 1")
    s1 = float(log1[1]["loss"]) if 1 in log1 else float("nan")
    d = abs(s1 - loss32.item()) / abs(loss32.item())
    rows = [["loss", "()", f"{loss32.item():.7f}", f"{s1:.7f}", fmt(d), "-", f"{loss1_tol:g}",
             "ok" if d <= loss1_tol else "FAIL"]]
    if not d <= loss1_tol:
        failures.append(f"step 1 loss: strata {s1} vs torch {loss32.item()} (rel {d:.2e})")
    for n in shapes:
        d, noise = rel(grads[n], ref32[n]), rel(ref32[n], ref64[n])
        tol = grad_tol + grad_k * noise
        rows.append([n, str(shapes[n]), fmt(ref32[n].norm().item()), fmt(grads[n].norm().item()),
                     fmt(d), fmt(noise), fmt(tol), "ok" if d <= tol else "FAIL"])
        if not d <= tol:
            failures.append(f"gradient of {n}: rel {d:.2e} > {tol:.2e}")
    ref.print_table("Step 1: loss and gradients (||strata - torch|| / ||torch||)",
                    ["tensor", "shape", "torch (norm)", "strata (norm)", "rel err", "f32 noise",
                     "tol", ""], rows)
    if bf16:  # bf16 must be what ran: nearer the bf16 reference than the float32 one is
        _, ref_fp32 = loss_and_grads(params, dict(CMP, tied=tied), x, y)
        err = sum(rel(grads[n], ref32[n]) for n in shapes)
        apart = sum(rel(ref_fp32[n], ref32[n]) for n in shapes)
        print(f"\n  bf16: errors add up to {err / apart:.2f} of the distance to the float32 "
              f"reference (must be under {t['vs_fp32']:g})")
        if not err < t["vs_fp32"] * apart:
            failures.append(f"--dtype bf16: gradients are {err / apart:.2f} of the way to the "
                            f"float32 reference's: the matmuls do not round like bf16")

    # 3. Ten clipped AdamW steps.
    clip, n_clipped, losses, norms, w10 = pick_clip(params, cfg, tokens)
    losses64, _, w10_64 = train(params, cfg, tokens, CMP_STEPS, clip, torch.float64)
    w10_path = os.path.join(workdir, "w10.safetensors")
    log_path = os.path.join(workdir, "train.jsonl")
    strata.train(f"{CMP_STEPS} steps", ["--steps", str(CMP_STEPS), "--grad-clip", repr(clip),
                                        "--log-json", log_path, "--export", w10_path])
    compare_losses(ref.read_log(log_path, "training"), losses, losses64, norms, clip, loss_tol,
                   failures)
    _, w10s = ref.read_safetensors(w10_path)
    rows = []
    bound = 2 * CMP_STEPS * CMP_LR  # |an Adam update| stays below ~lr per step
    for n in shapes:
        # bf16: an element whose step-1 gradient is within bf16's precision of zero (below 2^-8
        # of the tensor's largest) takes Adam steps of noise, whose sign either side may flip:
        # it is bounded by what Adam can move it, and the rest compared by the bf16 rule (as
        # gpt2_reference.py's weight_parts does for a bias of zero true gradient).
        near_zero = (ref32[n].abs() <= 2.0 ** -8 * ref32[n].abs().max()) if bf16 else \
            torch.zeros(shapes[n], dtype=torch.bool)
        keep = ~near_zero
        d, noise = rel(w10s[n][keep], w10[n][keep]), rel(w10[n][keep], w10_64[n][keep])
        moved = (w10s[n][near_zero].double() - params[n][near_zero].double()).abs()
        worst = moved.max().item() if moved.numel() else 0.0
        tol = weight_tol + weight_k * noise
        ok = d <= tol and worst <= bound
        rows.append([n, fmt(w10[n].norm().item()), fmt(rel(w10[n], params[n])), fmt(d), fmt(noise),
                     fmt(tol), f"{int(near_zero.sum())} ({worst:.1e})", "ok" if ok else "FAIL"])
        if not ok:
            failures.append(f"final weight {n}: rel {d:.2e} (tol {tol:.2e}), near-zero-gradient "
                            f"elements moved up to {worst:.2e} (bound {bound:g})")
    ref.print_table(f"Weights after {CMP_STEPS} steps ('bounded': elements of near-zero gradient "
                    f"and the most they moved, bound {bound:g})",
                    ["tensor", "torch (norm)", "moved", "rel err", "f32 noise", "tol", "bounded",
                     ""], rows)

    # 4. --init from a Hugging Face directory: W0 back bit for bit, then step 1's gradients.
    hf_dir = os.path.join(workdir, "hf")
    write_hf_directory(hf_dir, cfg, w0_path)
    back_path = os.path.join(workdir, "w0_back.safetensors")
    strata.train("--init a Hugging Face directory", ["--init", hf_dir, "--steps", "0",
                                                     "--export", back_path])
    _, back = ref.read_safetensors(back_path)
    differ = [n for n in shapes if n not in back or not torch.equal(back[n], w0[n])]
    print(f"\n--init {hf_dir} exports W0 back bit for bit: {'yes' if not differ else 'NO'}")
    if differ:
        failures.append(f"--init from the Hugging Face directory changes {differ}")
    g2_path = os.path.join(workdir, "grads_from_init.safetensors")
    strata.train("--init gradients", ["--init", hf_dir, "--steps", "1", "--export-grads", g2_path])
    _, grads2 = ref.read_safetensors(g2_path)
    differ = [n for n in shapes if n not in grads2 or not torch.equal(grads2[n], grads[n])]
    print(f"--init {hf_dir} gives bit-identical step-1 gradients: {'yes' if not differ else 'NO'}")
    if differ:
        failures.append(f"--init from the Hugging Face directory changes the gradients of {differ}")

    if failures:
        raise CheckFailed(f"{len(failures)} comparison(s) failed:\n  " + "\n  ".join(failures))
    print(f"\nPASS ({'tied' if tied else 'untied'}, {args.dtype}): loss and {len(shapes)} "
          f"gradients to {grad_tol:g}, {CMP_STEPS} losses to {loss_tol:g}, final weights to "
          f"{weight_tol:g} ({n_clipped} of {CMP_STEPS} steps clipped); --init from a Hugging "
          f"Face directory bit-identical")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("selfcheck")
    s.add_argument("--tied", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("--strata", required=True)
    c.add_argument("--workdir", required=True)
    c.add_argument("--tied", action="store_true")
    c.add_argument("--device", default="sim")
    c.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args()
    try:
        if args.cmd == "selfcheck":
            selfcheck(args.tied)
        else:
            compare(args)
    except CheckFailed as e:
        print(f"\nFAIL: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
