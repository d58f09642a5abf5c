#!/usr/bin/python3
"""BENCHMARKS.md's sections measured on a GPU machine (issue 31): their rows, and the import of
what `tools/gpu_check.sh run` wrote there (bench/update_benchmarks.py --import-gpu DIR).

The GPU machine is lent now and then, never to CI, so these results are not run by
update_benchmarks.py: they are stored from the machine's output folder, whose raw files are
kept under bench/results/gpu/ beside the JSON.
"""
import datetime
import json
import os
import sys

import gpu_kernel_shares
from bench_rows import ratio_row


def gpu_step_rows(j):
    """`strata bench step --device cuda` per model and dtype, and one step's kernel shares."""
    rows = []
    for r in j["runs"]:
        target = 0.35 if r["dtype"] == "bf16" else 0.6
        rows.append(ratio_row(
            f"mfu_{r['model']}_{r['dtype']}_batch{r['batch']}", r["peak_fraction"], target,
            f"{r['tflops']:.1f} TFLOP/s (FLOPs per token as llm.c counts them) vs the "
            f"{r['gpu']}'s dense {r['dtype']} peak {r['peak_tflops']:.1f} ({r['peak_source']}); "
            f"{r['tokens_per_s']:.0f} tokens/s, batch {r['batch']} x {r['seq']}, "
            f"median of {r['steps']} steps"))
    for dtype, p in sorted(j.get("profiles", {}).items()):
        sh = p["shares"]
        rows.append({"metric": f"kernel_shares_{dtype}", "value": p.get("kernel_share_of_step"),
                     "target": "report", "met": True,
                     "what": f"one step of a one-block gpt2 (batch 8 x 1024) under Nsight "
                             f"Compute, {p['kernels']} kernels, {p['kernel_ms']:.1f} ms of a "
                             f"{p.get('step_ms', 0):.1f} ms step (the value: the GPU's busy "
                             f"share); of the kernel time: "
                             + ", ".join(f"{g} {v:.1%}" for g, v in
                                         sorted(sh.items(), key=lambda x: -x[1]) if v >= 0.01)})
    return rows


def gpu_offload_rows(j):
    """`strata bench offload --device cuda` against issue 31's targets, the disk's floor beside."""
    step, comp, move = (j["overlap_step_s"], j["overlap_compute_only_s"],
                        j["overlap_movement_only_s"])
    factor = step / max(comp, move)
    rate = j["scale_nvme_bytes_per_s"]  # the NVMe tier's rate, measured by run 3
    cost_floor = j["offload_nvme_bytes_per_step"] / rate
    in_memory_step = j["offload_batch"] * j["offload_seq"] / j["in_memory_tokens_per_s"]
    amp_bytes = j["nvme_read_bytes_per_step"] + j["nvme_write_bytes_per_step"]
    amp_floor = amp_bytes / rate
    return [
        {"metric": "overlap_step_factor", "value": factor, "target": "<= 1.15",
         "met": factor <= 1.15,
         "what": f"step {step:.4f} s vs compute-only {comp:.4f} s and movement-only {move:.4f} s "
                 f"over the real PCIe link ({j['overlap_link_gbps']:.2f} GB/s achieved by the "
                 f"movement-only run: {j['overlap_h2d_bytes_per_step'] / 2**20:.0f} MiB up and "
                 f"{j['overlap_d2h_bytes_per_step'] / 2**20:.0f} MiB down per step, AdamW on the "
                 f"host); {j['overlap_model']}, {j['overlap_placement']}; median of rounds "
                 + ", ".join(f"{x:.3f}" for x in j["overlap_step_factor_rounds"])},
        ratio_row("offload_cost_ratio", j["offload_cost_ratio"], 0.8,
                  f"{j['offload_tokens_per_s']:.0f} vs {j['in_memory_tokens_per_s']:.0f} tokens/s "
                  f"in memory with --gpu-mem {j['offload_gpu_mem_fraction']:.0%} and --host-mem "
                  f"{j['offload_host_mem_fraction']:.0%} of {j['offload_state_bytes'] / 2**20:.0f} "
                  f"MiB of states; {j['offload_model']}, batch {j['offload_batch']} x "
                  f"{j['offload_seq']}. The disk rules it out at this size: "
                  f"{j['offload_nvme_bytes_per_step'] / 2**20:.0f} MiB of NVMe traffic per step "
                  f"at the {rate / 2**20:.0f} MiB/s the NVMe tier reached is {cost_floor:.3f} s, "
                  f"against a {in_memory_step:.4f} s step in GPU memory: at most "
                  f"{in_memory_step / cost_floor:.3f}"),
        ratio_row("scale_vs_memory", j["scale_vs_memory"], 0.7,
                  f"{j['amp_model']} with states {j['scale_vs_memory_device_multiple']:.1f}x "
                  f"--gpu-mem and {j['scale_vs_memory_host_multiple']:.1f}x --host-mem "
                  f"(parameters and moments on NVMe), paged "
                  f"{j['scale_vs_memory_paged_tokens_per_s']:.0f} vs "
                  f"{j['scale_vs_memory_in_memory_tokens_per_s']:.0f} tokens/s in GPU memory, "
                  f"median of rounds " + ", ".join(f"{x:.3f}" for x in
                                                   j["scale_vs_memory_rounds"])
                  + f". Its {amp_bytes / 2**20:.0f} MiB of NVMe traffic per step at "
                    f"{rate / 2**20:.0f} MiB/s take {amp_floor:.3f} s against the "
                    f"{j['scale_vs_memory_in_memory_step_s']:.3f} s step in memory: at most "
                    f"{min(1.0, j['scale_vs_memory_in_memory_step_s'] / amp_floor):.3f}"),
        {"metric": "nvme_amplification", "value": max(j["nvme_read_amplification"],
                                                      j["nvme_write_amplification"]),
         "target": "<= 1.3",
         "met": max(j["nvme_read_amplification"], j["nvme_write_amplification"]) <= 1.3,
         "what": f"NVMe bytes per step vs the page plan's minimum: read "
                 f"{j['nvme_read_amplification']:.3f}, write {j['nvme_write_amplification']:.3f}"},
    ]


def gpu_entry(title, measures, rows):
    """A section measured on a GPU machine and stored by --import-gpu, never run here."""
    return {"title": title, "measures": measures, "rows": rows, "imported": True}


def first_json(path):
    lines = [l for l in open(path, errors="replace").read().splitlines() if l.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def step_command(log):
    """The command a gpu_check.sh step ran (its log's first line), with the bundle's paths cut."""
    first = open(log).readline()
    cmd = first.split("): ", 1)[1].strip() if "): " in first else first.strip()
    return cmd.replace("/tmp/strata_gpu_bundle/bin/", "build/tools/")


def import_gpu(directory, root, results):
    """Stores what `tools/gpu_check.sh run` wrote in `directory` as bench/results/gpu_*.json."""
    info = open(os.path.join(directory, "gpu.txt")).read().splitlines()
    stamp = info[0].strip()
    date = None
    for fmt in ("%Y-%m-%d %H:%M:%S UTC", "%a %b %d %I:%M:%S %p %Z %Y", "%a %b %d %H:%M:%S %Z %Y"):
        try:
            date = datetime.datetime.strptime(stamp, fmt).date().isoformat()
        except ValueError:
            continue
    if date is None:
        sys.exit(f"update_benchmarks: cannot read the date '{stamp}' in {directory}/gpu.txt")
    gpu = info[2].split(",")[0].strip() if len(info) > 2 else "unknown GPU"
    source = os.path.relpath(os.path.abspath(directory), root)
    stored = []
    runs = []
    for name in sorted(os.listdir(directory)):
        if name.startswith("bench_step_") and name.endswith(".log"):
            j = first_json(os.path.join(directory, name))
            if j is not None:
                j["command"] = step_command(os.path.join(directory, name))
                runs.append(j)
    if runs:
        profiles = {}
        for dtype in ("fp32", "bf16"):
            for ext in ("", ".gz"):
                prof = os.path.join(directory, f"profile_gpt2_1block_{dtype}.log{ext}")
                if os.path.exists(prof):
                    steptime = os.path.join(directory, f"steptime_gpt2_1block_{dtype}.log")
                    profiles[dtype] = gpu_kernel_shares.shares(
                        prof, steptime if os.path.exists(steptime) else None, echo=lambda _: None)
        stored.append(("gpu_step", {"gpu": gpu, "runs": runs, "profiles": profiles},
                       "bash tools/gpu_check.sh run BUNDLE OUT step profile"))
    offload = os.path.join(directory, "bench_offload_cuda.log")
    if os.path.exists(offload) and first_json(offload) is not None:
        j = first_json(offload)
        j["gpu"] = gpu
        stored.append(("gpu_offload", j, step_command(offload)))
    if not stored:
        sys.exit(f"update_benchmarks: no bench step or bench offload JSON in {directory}")
    for name, j, command in stored:
        result = {"name": name, "date": date, "gpu": gpu, "source": source,
                  "command": command, "json": j}
        with open(os.path.join(results, name + ".json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
        print(f"update_benchmarks: stored {name} ({gpu}, {date}) from {source}", file=sys.stderr)
