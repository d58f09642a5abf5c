#!/usr/bin/python3
"""Where a step's GPU time goes, from Nsight Compute's raw CSV (tools/gpu_check.sh `profile`).

    bench/gpu_kernel_shares.py PROFILE_LOG [STEPTIME_LOG]

PROFILE_LOG holds `ncu --csv --page raw --metrics gpu__time_duration.sum,launch__grid_size`
over one training step; its kernels are grouped by what they do (cuBLAS GEMMs, the attention's
softmax, the bf16 operand copies, ...) and each group's share of the summed kernel time is
printed. With STRATA_LOG (the same configuration's `strata train` output without the profiler),
the kernels' sum is also set against the measured step time: the rest is the GPU idle between
kernels (launch gaps, host waits). Prints one JSON object last.
"""
import csv
import gzip
import io
import json
import re
import statistics
import sys

# Kernel-name patterns, first match wins. cuBLAS names its kernels after the GEMM family
# (sm90_xmma_gemm_*, cutlass_*gemm*, nvjet_sm90_* on Hopper, *gemv*, ...).
GROUPS = [
    ("gemm", re.compile(r"gemm|gemv|xmma|cutlass|nvjet|splitK|cublas", re.I)),
    ("attention_softmax", re.compile(r"CausalSoftmax")),
    ("bf16_operand_copies", re.compile(r"RoundToBf16")),
    ("cross_entropy", re.compile(r"SoftmaxLoss|CrossEntropy|MeanLoss")),
    ("layernorm", re.compile(r"LayerNorm")),
    ("adamw", re.compile(r"AdamW")),
    ("gelu", re.compile(r"Gelu")),
    ("residual", re.compile(r"Residual")),
    ("embedding", re.compile(r"Embedding|TokenGrad|TokenKeys|PositionGrad|[Ss]ort|Radix", re.I)),
    ("column_sums", re.compile(r"ColumnChunkSums|AddChunkSums|FillRows|ScaleRows")),
    ("norms", re.compile(r"ChunkSums")),
]


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return f.read()


def kernel_rows(path):
    text = read_text(path)
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"gpu_kernel_shares: no ncu CSV in {path}")
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    out = []
    for r in rows:
        value = r.get("gpu__time_duration.sum", "")
        try:
            ns = float(value.replace(",", ""))
        except ValueError:
            continue  # the units row
        out.append((r.get("Kernel Name", "?"), ns))
    return out


def step_ms(path):
    # `strata train` prints "step  k/n | ... | 245 ms | ..."; the median of steps after the first.
    times = [float(m) for m in re.findall(r"^step\s+\d+/\d+ \|.*?\| (\d+(?:\.\d+)?) ms",
                                           read_text(path), re.M)]
    return statistics.median(times[1:]) if len(times) > 1 else None


def shares(profile_log, steptime_log=None, echo=print):
    """The groups' shares of the kernel time (and of the step, with steptime_log), as a dict."""
    kernels = kernel_rows(profile_log)
    total = sum(ns for _, ns in kernels)
    by_group, names = {}, {}
    for name, ns in kernels:
        group = next((g for g, pattern in GROUPS if pattern.search(name)), "other")
        by_group[group] = by_group.get(group, 0.0) + ns
        names.setdefault(group, {}).setdefault(name.split("(")[0][:60], 0.0)
        names[group][name.split("(")[0][:60]] += ns
    result = {"kernels": len(kernels), "kernel_ms": total / 1e6,
              "shares": {g: ns / total for g, ns in sorted(by_group.items(), key=lambda x: -x[1])}}
    for g, share in result["shares"].items():
        top = sorted(names[g].items(), key=lambda x: -x[1])[:3]
        echo(f"{g:22s} {share:6.1%}  {by_group[g] / 1e6:8.2f} ms  "
              + ", ".join(f"{n} {ns / 1e6:.2f}" for n, ns in top))
    if steptime_log:
        ms = step_ms(steptime_log)
        if ms:
            # ncu profiles the first step (--steps 1), whose kernels match a later step's.
            result["step_ms"] = ms
            result["kernel_share_of_step"] = total / 1e6 / ms
            echo(f"kernels {total / 1e6:.2f} ms of a {ms:.2f} ms step: "
                 f"{total / 1e6 / ms:.1%} busy, the rest idle between kernels")
    return result


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    print(json.dumps(shares(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)))


if __name__ == "__main__":
    main()
