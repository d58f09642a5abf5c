#!/usr/bin/python3
"""Runs Strata's benchmarks and rewrites BENCHMARKS.md from their output.

Every number in BENCHMARKS.md comes from here: each benchmark prints one JSON object (its
last line starting with '{'), which is stored in bench/results/<name>.json with the date and
the exact command; BENCHMARKS.md is then rendered from every stored result, so running one
benchmark keeps the others' latest figures.

    bench/update_benchmarks.py                 # run all, rewrite BENCHMARKS.md
    bench/update_benchmarks.py step io         # run these only
    bench/update_benchmarks.py --render-only   # re-render from bench/results/
    bench/update_benchmarks.py --import-gpu DIR [DIR ...]
        # store a GPU machine's results (the OUT folders of `tools/gpu_check.sh run`, which
        # runs there: tests/gpu/README.md) as bench/results/gpu_*.json, then re-render
Env: NVME_DIR (default build/bench-io) is the directory the disk benchmarks use.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_rows import ratio_row  # noqa: E402
from gpu_results import gpu_entry, gpu_offload_rows, gpu_step_rows, import_gpu  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULTS = os.path.join(ROOT, "bench", "results")
NVME_DIR = os.environ.get("NVME_DIR", os.path.join(ROOT, "build", "bench-io"))


def step_rows(j):
    def rounds(key, what):
        if key not in j:
            return ""
        return f"; {what} of {j['rounds']} rounds: " + ", ".join(f"{x:.3f}" for x in j[key])
    return [
        ratio_row("torch_ratio", j["torch_ratio"], j.get("torch_ratio_target", 1.2),
                  f"Strata {j['strata_tokens_per_s']:.0f} tokens/s vs PyTorch "
                  f"{j['torch_tokens_per_s']:.0f} (its best thread split: "
                  f"torch {j['torch_best_setting']['torch_threads']} x OpenBLAS "
                  f"{j['torch_best_setting']['blas_threads']})"
                  + rounds("torch_ratio_rounds", "the median round")),
        ratio_row("gemm_fraction", j["gemm_fraction"], 0.6,
                  f"step {j['gflops']:.1f} GFLOP/s vs sgemm 2048^3 {j['gemm_peak_gflops']:.1f} "
                  f"GFLOP/s, {j['threads']} threads, in the median ratio's round"
                  + rounds("gemm_fraction_rounds", "each")),
    ]


def io_rows(j):
    rows = []
    for p in j["patterns"]:
        rows.append(ratio_row(f"{p['rw']}_ratio", p["ratio"], p["target"],
                              f"Strata {p['strata_bytes_per_s'] / 2**20:.0f} MiB/s vs fio "
                              f"{p['fio_bytes_per_s'] / 2**20:.0f} MiB/s"))
    like = j.get("read_like_for_like")
    if like:
        # Issue 13: Strata's buffers on 4 KiB pages like fio's; each round with the physical
        # segments per MiB Strata's buffer got (the rate follows them: storage/physical_layout.cc).
        per_round = ", ".join(
            f"{r['strata_bytes_per_s'] / 2**20:.0f}/{r['fio_bytes_per_s'] / 2**20:.0f}"
            + (f" @ {r['strata_buffer_segments_per_mib']:.0f} seg/MiB"
               if r.get("strata_buffer_segments_per_mib") is not None else "")
            for r in like["rounds"])
        rows.append(ratio_row("read_ratio_like_for_like", j["read_ratio_like_for_like"],
                              j.get("read_ratio_like_for_like_target", 0.95),
                              f"sequential read, Strata's buffers on 4 KiB pages (--no-huge-pages) "
                              f"{like['strata_bytes_per_s'] / 2**20:.0f} MiB/s vs fio "
                              f"{like['fio_bytes_per_s'] / 2**20:.0f} MiB/s, median of "
                              f"{len(like['rounds'])} rounds (strata/fio MiB/s: {per_round})"))
    c = j.get("commit")
    if c:
        rows.append({"metric": "commit_latency", "value": None, "target": "report", "met": True,
                     "what": f"sync WriteBatch p50 {c['catalog_p50_us']:.0f} us, p99 "
                             f"{c['catalog_p99_us']:.0f} us ({c['pages_per_commit']} pages per "
                             f"commit)"})
    return rows


def pages_rows(j):
    rows = []
    for what in ("h2d", "d2h"):
        rows.append(ratio_row(f"{what}_ratio", j[f"{what}_ratio"], 0.9,
                              f"page moves {j[what + '_page_gbytes_per_s']:.2f} GB/s vs memcpy "
                              f"{j[what + '_memcpy_gbytes_per_s']:.2f} GB/s"))
    for what in ("nvme_write", "nvme_read"):
        rows.append(ratio_row(f"{what}_ratio", j[f"{what}_ratio"], 0.9,
                              f"page moves {j[what + '_page_gbytes_per_s']:.2f} GB/s vs raw "
                              f"IoEngine {j[what + '_raw_gbytes_per_s']:.2f} GB/s"))
    v = j["belady_vs_lru_ratio"]
    rows.append({"metric": "belady_vs_lru_ratio", "value": v, "target": "<= 1.0", "met": v <= 1.0,
                 "what": f"bytes moved on the training trace: Belady {j['belady_moved_bytes']} vs "
                         f"LRU {j['lru_moved_bytes']}"})
    return rows


def generic_rows(j):
    """Every `<what>_ratio` field, with its `<what>_target` when the benchmark gives one."""
    rows = []
    for k, v in j.items():
        if k.endswith("_ratio") and isinstance(v, (int, float)):
            base = k[: -len("_ratio")]
            target = j.get(base + "_target")
            context = ", ".join(f"{kk}={vv:.4g}" if isinstance(vv, float) else f"{kk}={vv}"
                                for kk, vv in j.items()
                                if kk.startswith(base) and kk != k and kk != base + "_target")
            if target is None:
                rows.append({"metric": k, "value": v, "target": "report", "met": True,
                             "what": context})
            else:
                rows.append(ratio_row(k, v, target, context))
    return rows


def offload_rows(j):
    """`strata bench offload`: explicit targets and directions (bench/bench_offload.cc)."""
    step = j["overlap_step_s"]
    comp, move = j["overlap_compute_only_s"], j["overlap_movement_only_s"]
    # The target is an upper bound (step <= 1.15 x max): shown as the step-time factor.
    factor = step / max(comp, move)
    rows = [{"metric": "overlap_step_factor", "value": factor, "target": "<= 1.15",
             "met": factor <= 1.15,
             "what": f"step {step:.3f} s vs compute-only {comp:.3f} s (in-memory trainer) and "
                     f"movement-only {move:.3f} s (the same run with --movement-only; "
                     f"movement/compute {move / comp:.2f}); {j['overlap_model']}, "
                     f"{j['overlap_placement']}, --gpu-mem "
                     f"{j['overlap_gpu_mem'] / 2**20:.0f} MiB; h2d "
                     f"{j['overlap_h2d_bytes_per_step'] / 2**20:.0f} and d2h "
                     f"{j['overlap_d2h_bytes_per_step'] / 2**20:.0f} MiB/step at the "
                     f"{j['overlap_link_gbps']:.3f} GB/s sim link, calibrated so that the link "
                     f"alone takes {j['overlap_link_share']:.2f} of the compute-only time "
                     f"(backward's share: Note [Overlap configuration]); measured overlap "
                     f"{j['overlap_fraction']:.2f}"
                     + (f"; the median of {j['overlap_rounds']} rounds, whose factors were "
                        + ", ".join(f"{x:.3f}" for x in j["overlap_step_factor_rounds"])
                        if "overlap_step_factor_rounds" in j else "")}]
    if j.get("overlap_clipped_step_factor") is not None:
        cf = j["overlap_clipped_step_factor"]
        rows.append({"metric": "overlap_clipped_step_factor", "value": cf, "target": "<= 1.15",
                     "met": cf <= 1.15,
                     "what": f"the same model with {j['overlap_clipped_placement']}, "
                             f"--gpu-mem {j['overlap_clipped_gpu_mem'] / 2**20:.0f} MiB (half "
                             f"the blocks' slots), the link "
                             f"({j['overlap_clipped_link_gbps']:.3f} GB/s) calibrated so that "
                             f"it alone takes the whole compute-only time: step "
                             f"{j['overlap_clipped_step_s']:.3f} s vs compute-only {j.get('overlap_clipped_compute_only_s', comp):.3f} s "
                             f"and movement-only {j['overlap_clipped_movement_only_s']:.3f} s"
                             + (f"; median of the rounds' "
                                + ", ".join(f"{x:.3f}" for x in
                                            j["overlap_clipped_step_factor_rounds"])
                                if "overlap_clipped_step_factor_rounds" in j else "")})
    rows += [
            ratio_row("offload_cost_ratio", j["offload_cost_ratio"], 0.9,  # issue 13: stays >= 0.9
                      f"{j['offload_tokens_per_s']:.0f} tokens/s with --gpu-mem "
                      f"{j['offload_gpu_mem_fraction'] * 100:.1f}% and --host-mem "
                      f"{j['offload_host_mem_fraction'] * 100:.1f}% of the "
                      f"{j['offload_state_bytes'] / 2**20:.0f} MiB states (micro-batch "
                      f"{j['offload_micro_batch']}, {j['offload_recompute_layers']} blocks "
                      f"recomputed, "
                      f"{j['offload_nvme_bytes_per_step'] / 2**20:.0f} MiB NVMe per step"
                      + (", device budget raised to the minimal working set"
                         if j["offload_budget_raised"] else "")
                      + f") vs {j['in_memory_tokens_per_s']:.0f} in memory; "
                        f"{j['offload_model']} batch {j['offload_batch']} x seq "
                        f"{j['offload_seq']}; the sim device computes on {j['threads']} "
                        f"thread(s), the host work on the other cores (Note [Device and host "
                        f"cores])")]
    if j.get("offload_cost_ratio_shared_cores") is not None:
        rows.append(ratio_row("offload_cost_ratio_shared_cores",
                              j["offload_cost_ratio_shared_cores"], 0.8,
                              "the same pair with the kernels on every core (--threads 0), "
                              "where the paged run's copies, checksums, I/O and AdamW take "
                              "cycles from the kernels (issue 13's target)"
                              + (f": paged {j['shared_cores_offload_tokens_per_s']:.0f} vs "
                                 f"{j['shared_cores_in_memory_tokens_per_s']:.0f} tokens/s in "
                                 f"the median of {len(j['offload_cost_ratio_shared_cores_rounds'])}"
                                 f" rounds, whose ratios were "
                                 + ", ".join(f"{x:.3f}" for x in
                                             j["offload_cost_ratio_shared_cores_rounds"])
                                 if j.get("offload_cost_ratio_shared_cores_rounds") else "")))
    if j.get("offload_cost_ratio_shared_cores_no_clip") is not None:
        rows.append({"metric": "offload_cost_ratio_shared_cores_no_clip",
                     "value": j["offload_cost_ratio_shared_cores_no_clip"], "target": "report",
                     "met": True,
                     "what": "the shared-cores pair once more with --grad-clip 0, so that every "
                             "update may start during backward instead of waiting for the "
                             "global norm: what the wait for the norm costs the ratio "
                             "(docs/scheduler.md, Limits)"})
    if j.get("offload_cost_cpu_bound") is not None:
        rows.append({"metric": "offload_cost_cpu_bound", "value": j["offload_cost_cpu_bound"],
                     "target": "report", "met": True,
                     "what": f"the cost ratio the paged run would reach with all {j['cpu_cores']} "
                             f"cores busy all the time: it uses "
                             f"{j.get('shared_cores_offload_cpu_s_per_step', j['offload_cpu_s_per_step']):.3f} CPU s per step vs "
                             f"{j.get('shared_cores_in_memory_cpu_s_per_step', j['in_memory_cpu_s_per_step']):.3f} in memory, cores shared (kernels, copies, "
                             f"checksums, I/O and AdamW share the cores: Note [CPU bound] in "
                             f"bench/bench_offload.cc)"})
    losses = ", ".join(f"{l:.3f}" for l in j["scale_losses"])
    st = j["scale_state_bytes"]
    rows.append({"metric": "scale_loss_falling", "value": None, "target": "falls",
                 "met": bool(j["scale_loss_falling"]),
                 "what": f"{j['scale_model']}: states {st / 2**20:.0f} MiB = "
                         f"{st / j['scale_host_mem']:.1f}x --host-mem, "
                         f"{st / j['scale_gpu_mem']:.1f}x --gpu-mem; losses {losses}"})
    fio = j.get("scale_fio_read_bytes_per_s")
    rows.append({"metric": "scale_nvme_vs_fio_ratio", "value": j.get("scale_nvme_vs_fio_ratio"),
                 "target": "report", "met": True,
                 "what": f"{j['scale_nvme_bytes_per_step'] / 2**20:.0f} MiB NVMe read+write per "
                         f"step, {j['scale_nvme_bytes_per_s'] / 2**20:.0f} MiB/s over the step"
                         + (f" vs fio sequential read {fio / 2**20:.0f} MiB/s" if fio else
                            " (fio not run: not installed or --no-fio)")})
    for name, what in (("cost", "the cost configuration above"),
                       ("demo", "the demo's configuration (tools/demo.sh)")):
        ratio = j.get(f"host_eviction_{name}_belady_vs_lru_ratio")
        if ratio is None:
            continue
        b = j[f"host_eviction_{name}_belady_nvme_bytes_per_step"]
        l = j[f"host_eviction_{name}_lru_nvme_bytes_per_step"]
        rows.append({"metric": f"host_eviction_{name}_belady_vs_lru", "value": ratio,
                     "target": "report", "met": True,
                     "what": f"NVMe read+write per step in {what}: Belady over the learned "
                             f"plan {b / 2**20:.0f} MiB vs LRU + demote {l / 2**20:.0f} MiB "
                             f"(mean of {j['eviction_steps']} steps after the plan is set; "
                             f"the default is the one that moves fewer)"})
    return rows + amplification_rows(j)


def amplification_rows(j, prefix=""):
    """bench offload's run 5 (bench/bench_offload_amplification.cc), when the result has it;
    `prefix` names the metrics of another family's run."""
    if j.get("nvme_read_amplification") is None and j.get("scale_vs_memory") is None:
        return []
    mib = lambda v: f"{v / 2**20:.0f} MiB" if v >= 2**20 else f"{v / 2**10:.0f} KiB"
    st = j["amp_state_bytes"]
    config = (f"{j['amp_model']}, batch {j['amp_batch']} in micro-batches of "
              f"{j['amp_micro_batch']} x seq {j['amp_seq']}, {mib(st)} of state in "
              f"{mib(j['amp_page_bytes'])} pages = {st / j['amp_gpu_mem']:.1f}x --gpu-mem "
              f"{j['amp_gpu_mem'] / 2**20:.2f} MiB and {st / j['amp_host_mem']:.1f}x --host-mem "
              f"{j['amp_host_mem'] / 2**20:.2f} MiB, params on {j['amp_params_on']}, optimizer on "
              f"{j['amp_optimizer_on']}, {j['amp_recompute_layers']} blocks recomputed")
    steps = (f"mean of {j['amp_steps']} steps after {j['amp_warmup_steps']} warmup steps, "
             f"in each of {j['amp_rounds']} rounds")
    target = j["nvme_amplification_target"]
    rows = []
    for rw, floor_what in (("read", "every NVMe-resident parameter page read twice (forward "
                                    "and backward), every NVMe-resident moment page once"),
                           ("write", "every NVMe-resident parameter and moment page written "
                                     "once")):
        v = j.get(f"nvme_{rw}_amplification")
        rounds = ", ".join("-" if x is None else f"{x:.3f}"
                           for x in j[f"nvme_{rw}_amplification_rounds"])
        rows.append({"metric": f"{prefix}nvme_{rw}_amplification", "value": v,
                     "target": f"<= {target}", "met": v is not None and v <= target,
                     "what": f"NVMe {rw}s {mib(j[f'nvme_{rw}_bytes_per_step'])} per step vs "
                             f"the minimum {mib(j[f'nvme_min_{rw}_bytes_per_step'])} from the "
                             f"page plan ({floor_what}; gradients never; "
                             f"{j['amp_param_pages']} parameter and {j['amp_moment_pages']} "
                             f"moment pages); {steps}: {rounds}; "
                             + (config if rw == "read" else "the same runs")})
    v, t = j["scale_vs_memory"], j["scale_vs_memory_target"]
    rounds = "; ".join(f"{p:.0f} vs {m:.0f} tokens/s = {r:.3f}" for p, m, r in zip(
        j["scale_vs_memory_paged_tokens_per_s_rounds"],
        j["scale_vs_memory_in_memory_tokens_per_s_rounds"], j["scale_vs_memory_rounds"]))
    rows.append(ratio_row(f"{prefix}scale_vs_memory", v, t,
                          f"paged {j['scale_vs_memory_paged_tokens_per_s']:.0f} tokens/s vs "
                          f"{j['scale_vs_memory_in_memory_tokens_per_s']:.0f} for the same "
                          f"model trained in memory (--engine memory), the median of "
                          f"{j['amp_rounds']} rounds (in memory then paged, back to back): "
                          f"{rounds}; losses equal: "
                          f"{'yes' if j['scale_vs_memory_losses_equal'] else 'NO'}; median "
                          f"round's steps: paged {j['scale_vs_memory_paged_step_s']:.2f} s "
                          f"using {j['scale_vs_memory_paged_cpu_s_per_step']:.2f} CPU s, in "
                          f"memory {j['scale_vs_memory_in_memory_step_s']:.2f} s using "
                          f"{j['scale_vs_memory_in_memory_cpu_s_per_step']:.2f} CPU s; the sim "
                          f"device computes on {j['amp_threads']} thread(s), the host work on "
                          f"the other cores (Note [Device and host cores]); {config}"))
    return rows


def parallel_rows(j):
    """`strata bench parallel` (bench/bench_parallel.cc): issue 14's dp_scaling,
    collective_efficiency, shard_cost, comm_overlap and osdp_vs_zero3, and issue 15's
    tp_efficiency, pipeline_bubble and schedule_memory; each that was measured (--no-dp,
    --no-collectives, --no-shard-cost, --no-comm-overlap, --no-osdp, --no-tp and --no-pp leave one
    out)."""
    rows = []
    if j.get("dp_scaling") is not None:
        rounds = "; ".join(f"{a:.0f} vs {b:.0f} = {r:.3f}" for a, b, r in zip(
            j["dp2_tokens_per_s_rounds"], j["dp1_tokens_per_s_rounds"], j["dp_scaling_rounds"]))
        rows.append(ratio_row("dp_scaling", j["dp_scaling"], j.get("dp_scaling_target", 0.85),
                              f"2 ranks of 1 thread {j['dp2_tokens_per_s']:.0f} tokens/s "
                              f"(`{j['dp2_command']}`) vs 1 rank of 2 threads "
                              f"{j['dp1_tokens_per_s']:.0f} tokens/s (`{j['dp1_command']}`) on "
                              f"{j['cpu_cores']} cores; `{j['dp_model']}` batch {j['dp_batch']} x "
                              f"seq {j['dp_seq']}, each run's median of {j['dp_steps']} steps "
                              f"after {j['dp_warmup_steps']} warmup; the median of "
                              f"{len(j['dp_scaling_rounds'])} rounds (2 ranks vs 1 rank tokens/s: "
                              f"{rounds})"))
    if j.get("collective_efficiency") is None:
        return rows + shard_rows(j) + osdp_rows(j) + tp_rows(j) + pp_rows(j)
    target = j.get("collective_efficiency_target", 0.9)
    size = lambda b: f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 2**10:g} KiB"
    sizes = j["collective_efficiency_sizes"]
    span = f"{size(min(sizes))} to {size(max(sizes))}" if sizes else "every size"
    rows.append(ratio_row("collective_efficiency", j["collective_efficiency"], target,
                          f"Strata's Comm (MPI backend) vs raw MPI, bytes/s, 2 ranks: the weaker of "
                          f"the all-gather's and the reduce-scatter's median ratios over buffers "
                          f"of {span} per rank (both must meet the target), each op timed from an MPI_Barrier to the slowest rank's "
                          f"completion, median of {j['collective_rounds']} rounds alternating "
                          f"Strata and MPI (`{j['collectives_command']}`, MPI thread level "
                          f"{j['mpi_thread_level']})"))
    for op, raw, note in (("all_gather", "MPI_Allgather", ""),
                          ("reduce_scatter", "MPI_Reduce_scatter_block (MPI_FLOAT, MPI_SUM)",
                           "; Strata's is deterministic: an all-to-all, then a fold in rank order "
                           "(Note [Deterministic reductions] in docs/parallel.md)")):
        per_size = ", ".join(
            f"{size(c['bytes'])} {c['strata_bytes_per_s'] / 2**20:.0f}/"
            f"{c['mpi_bytes_per_s'] / 2**20:.0f} MiB/s = {c['ratio']:.3f}"
            + ("" if c["outputs_equal"] else " (outputs DIFFER)")
            for c in j["collectives"] if c["op"] == op)
        rows.append(ratio_row(f"collective_efficiency_{op}", j[f"collective_efficiency_{op}"],
                              target, f"Comm {op} vs {raw}, median over {span}; per size "
                                      f"Strata/MPI: {per_size}{note}"))
    return rows + shard_rows(j) + osdp_rows(j) + tp_rows(j) + pp_rows(j)


def shard_rows(j):
    """bench parallel's 3 (shard_cost) and 4 (comm_overlap), when the result has them (Notes
    [Shard cost] and [Comm overlap] in bench/bench_parallel.cc)."""
    rows = []
    if j.get("shard_model") is None:
        return rows
    config = (f"`{j['shard_model']}` batch {j['shard_batch']} x seq {j['shard_seq']}, 2 ranks of 1 "
              f"thread, paged engine, --gpu-mem {j['shard_gpu_mem'] / 2**20:.0f} MiB and "
              f"--host-mem {j['shard_host_mem'] / 2**20:.0f} MiB per rank in every run, on "
              f"{j['cpu_cores']} cores; each run's median of {j['shard_steps']} steps after "
              f"{j['shard_warmup_steps']} warmup")
    if j.get("shard_cost") is not None:
        rounds = "; ".join(
            f"{a:.0f} vs {b:.0f} = {r:.3f} ({first} first)" for a, b, r, first in zip(
                j["shard_all_tokens_per_s_rounds"], j["shard_none_tokens_per_s_rounds"],
                j["shard_cost_rounds"], j["shard_first_rounds"]))
        rows.append(ratio_row("shard_cost", j["shard_cost"], j.get("shard_cost_target", 0.9),
                              f"--shard all (ZeRO-3) {j['shard_all_tokens_per_s']:.0f} tokens/s "
                              f"(`{j['shard_all_command']}`) vs --shard none (replicated) "
                              f"{j['shard_none_tokens_per_s']:.0f} tokens/s "
                              f"(`{j['shard_none_command']}`); {config}; the round with the "
                              f"median ratio of {len(j['shard_cost_rounds'])}, alternating which "
                              f"goes first (all vs none tokens/s: {rounds})"))
    if j.get("comm_overlap") is not None:
        v, t = j["comm_overlap"], j.get("comm_overlap_target", 1.15)
        rounds = "; ".join(
            f"{s:.3f} / max({c:.3f}, {m:.3f}) = {f:.3f}" for s, c, m, f in zip(
                j["comm_overlap_step_s_rounds"], j["comm_overlap_compute_only_s_rounds"],
                j["comm_overlap_comm_only_s_rounds"], j["comm_overlap_rounds"]))
        rows.append({"metric": "comm_overlap", "value": v, "target": f"<= {t}", "met": v <= t,
                     "what": f"the --shard all step {j['comm_overlap_step_s']:.3f} s "
                             f"(`{j['comm_overlap_step_command']}`) vs max(compute-only "
                             f"{j['comm_overlap_compute_only_s']:.3f} s, comm-only "
                             f"{j['comm_overlap_comm_only_s']:.3f} s); comm-only = the same run "
                             f"with --movement-only: every all-gather, gradient reduce-scatter, "
                             f"copy and host AdamW of the step, no kernels "
                             f"(`{j['comm_overlap_comm_only_command']}`); compute-only = the "
                             f"kernels alone with no collectives: the compute queue's busy time "
                             f"per step in the traces of 2 single-rank runs of the per-rank batch "
                             f"started at once, the slower one's "
                             f"(`{j['comm_overlap_compute_only_command']}`, twice; Note [Comm "
                             f"overlap] in bench/bench_parallel.cc); {config}; the round with "
                             f"the median factor of {len(j['comm_overlap_rounds'])}, each running "
                             f"the three in a rotated order (step / max(compute-only, comm-only) "
                             f"s: {rounds})"})
    return rows


def osdp_rows(j):
    """bench parallel's 5 (osdp_vs_zero3), when the result has it (Note [OSDP vs ZeRO-3] in
    bench/bench_parallel.cc). Reported, no target."""
    if j.get("osdp_vs_zero3") is None:
        return []
    ms = lambda s: f"{s * 1e3:.4g} ms"
    size = lambda b: f"{b / 2**20:g} MiB" if b >= 2**20 else f"{b / 2**10:g} KiB"
    rounds = "; ".join(
        f"{ms(al)} / {ms(au)} = {r:.3f}, predicted {ms(pal)} / {ms(pau)} = {pr:.3f} ({first} "
        f"first; blocks {d})" for al, au, r, pal, pau, pr, first, d in zip(
            j["osdp_all_step_s_rounds"], j["osdp_auto_step_s_rounds"], j["osdp_vs_zero3_rounds"],
            j["osdp_predicted_all_sharded_step_s_rounds"],
            j["osdp_predicted_auto_step_s_rounds"], j["osdp_predicted_ratio_rounds"],
            j["osdp_first_rounds"], j["osdp_decision_rounds"]))
    return [{"metric": "osdp_vs_zero3", "value": j["osdp_vs_zero3"], "target": "report",
             "met": True,
             "what": f"measured step time of --shard all (ZeRO-3) {ms(j['osdp_all_step_s'])} "
                     f"(`{j['osdp_all_command']}`) / --shard auto (OSDP) "
                     f"{ms(j['osdp_auto_step_s'])} (`{j['osdp_auto_command']}`), > 1: auto is "
                     f"faster; auto chose blocks {j['osdp_decision']} and predicted "
                     f"{ms(j['osdp_predicted_auto_step_s'])} for its choice vs "
                     f"{ms(j['osdp_predicted_all_sharded_step_s'])} with every block sharded "
                     f"(predicted ratio {j['osdp_predicted_ratio']:.3f}; {j['osdp_choice']}); "
                     f"`{j['osdp_model']}` batch {j['osdp_batch']} x seq {j['osdp_seq']}, 2 ranks "
                     f"of 1 thread, paged engine, --gpu-mem {size(j['osdp_gpu_mem'])}, --host-mem "
                     f"{size(j['osdp_host_mem'])} and --page-size {size(j['osdp_page_size'])} "
                     f"per rank in both runs (a budget where "
                     f"replicating some blocks fits but not all), on {j['cpu_cores']} cores; each "
                     f"run's median of {j['osdp_steps']} steps after {j['osdp_warmup_steps']} "
                     f"warmup; the round with the median ratio of "
                     f"{len(j['osdp_vs_zero3_rounds'])}, alternating which goes first (all / "
                     f"auto step: {rounds}; Note [OSDP vs ZeRO-3] in bench/bench_parallel.cc)"}]


def tp_rows(j):
    """bench parallel's 6 (tp_efficiency and tp_allreduce_share), when the result has it (Note
    [Tensor-parallel efficiency] in bench/bench_parallel.cc). Reported, no target."""
    if j.get("tp_efficiency") is None:
        return []
    ms = lambda s: f"{s * 1e3:.1f} ms"
    rounds = "; ".join(
        f"{a:.0f} vs {b:.0f} = {r:.3f} ({first} first)" for a, b, r, first in zip(
            j["tp2_tokens_per_s_rounds"], j["tp1_tokens_per_s_rounds"],
            j["tp_efficiency_rounds"], j["tp_first_rounds"]))
    shares = "; ".join(f"{ms(c)} of {ms(s)} = {x:.3f}" for c, s, x in zip(
        j["tp2_compute_comm_s_rounds"], j["tp2_step_s_rounds"], j["tp_allreduce_share_rounds"]))
    config = (f"`{j['tp_model']}` batch {j['tp_batch']} x seq {j['tp_seq']}, paged engine at "
              f"each run's default budgets, on {j['cpu_cores']} cores; each run's median of "
              f"{j['tp_steps']} steps after {j['tp_warmup_steps']} warmup")
    return [
        {"metric": "tp_efficiency", "value": j["tp_efficiency"], "target": "report", "met": True,
         "what": f"--tp 2 as 2 ranks of 1 thread {j['tp2_tokens_per_s']:.0f} tokens/s "
                 f"(`{j['tp2_command']}`) vs 1 rank of 2 threads {j['tp1_tokens_per_s']:.0f} "
                 f"tokens/s (`{j['tp1_command']}`); {config}; the round with the median ratio "
                 f"of {len(j['tp_efficiency_rounds'])}, alternating which goes first (tp2 vs 1 "
                 f"rank tokens/s: {rounds}; Note [Tensor-parallel efficiency] in "
                 f"bench/bench_parallel.cc)"},
        {"metric": "tp_allreduce_share", "value": j["tp_allreduce_share"], "target": "report",
         "met": True,
         "what": f"the part of the --tp 2 step its compute stream spends waiting in its own tp "
                 f"all-reduces (rank 0's median compute_comm_s / its median step time over a "
                 f"run's counted steps), the median of {len(j['tp_allreduce_share_rounds'])} rounds "
                 f"(all-reduce wait of step: {shares})"},
    ]


def pp_rows(j):
    """bench parallel's 7 (pipeline_bubble, target <= 1.15) and 8 (schedule_memory, reported), when
    the result has them (Notes [Pipeline bubble] and [Schedule memory] in
    bench/bench_parallel.cc)."""
    rows = []
    ms = lambda s: f"{s * 1e3:.1f} ms"
    if j.get("pipeline_bubble") is not None:
        v, t = j["pipeline_bubble"], j.get("pipeline_bubble_target", 1.15)
        m, p = j["pp_micro_batches"], 2
        rounds = "; ".join(
            f"{ms(s)} / ({ms(c)} / {p} x {m + p - 1}/{m} = {ms(i)}) = {b:.3f} ({first} first; "
            f"pair {', '.join(ms(x) for x in each)}; stage 0 waits {ms(w)})"
            for s, c, i, b, first, each, w in zip(
                j["pp2_step_s_rounds"], j["pp1_compute_s_rounds"],
                j["pipeline_ideal_step_s_rounds"], j["pipeline_bubble_rounds"],
                j["pp_first_rounds"], j["pp1_compute_process_s_rounds"],
                j["pp2_compute_comm_s_rounds"]))
        rows.append({"metric": "pipeline_bubble", "value": v, "target": f"<= {t}", "met": v <= t,
                     "what": f"the --pp 2 --schedule 1f1b step {ms(j['pp2_step_s'])} "
                             f"(`{j['pp2_command']}`) vs the ideal pipeline step T1 / {p} x "
                             f"({m} + {p} - 1) / {m} = {ms(j['pipeline_ideal_step_s'])}, T1 = "
                             f"{ms(j['pp1_compute_s'])}: one rank's compute, the compute queue's "
                             f"busy time per step in the traces of 2 single-rank runs of the whole "
                             f"model started at once, the slower one's "
                             f"(`{j['pp1_command']}`, twice; Note [Pipeline bubble] in "
                             f"bench/bench_parallel.cc); `{j['pp_model']}` batch {j['pp_batch']} "
                             f"in {m} micro-batches of {j['pp_micro_batch']} x seq {j['pp_seq']}, "
                             f"1 thread per rank, paged engine at each run's default budgets, on "
                             f"{j['cpu_cores']} cores; each run's median of {j['pp_steps']} steps "
                             f"after {j['pp_warmup_steps']} warmup. Where the step goes: stage 0 "
                             f"waits in its activation receives {ms(j['pp2_compute_comm_s'])} "
                             f"({j['pp2_compute_comm_share']:.3f} of the step; an ideal 1F1B "
                             f"idles {p - 1}/{m + p - 1} = {(p - 1) / (m + p - 1):.3f}); stages "
                             f"{j['pp_stages']} per micro-batch as --pp-partition auto predicted "
                             f"(imbalance {j['pp_stage_imbalance']:.3f}); the round with the "
                             f"median figure of {len(j['pipeline_bubble_rounds'])}, alternating "
                             f"which goes first (pp2 step / ideal: {rounds})"})
    if j.get("schedule_memory") is not None:
        mib = lambda b: f"{b / 2**20:.2f} MiB" if b >= 2**20 else f"{b / 2**10:.0f} KiB"
        rows.append({"metric": "schedule_memory", "value": j["schedule_memory"],
                     "target": "report", "met": True,
                     "what": f"rank 0's (stage 0's) peak activation bytes of --pp 2 with "
                             f"{j['schedule_memory_micro_batches']} micro-batches under GPipe "
                             f"{mib(j['schedule_memory_gpipe_activation_bytes'])} "
                             f"(`{j['schedule_memory_gpipe_command']}`) / under 1F1B "
                             f"{mib(j['schedule_memory_1f1b_activation_bytes'])} "
                             f"(`{j['schedule_memory_1f1b_command']}`): GPipe holds every "
                             f"micro-batch's activations, 1F1B 2 on stage 0, beside what both "
                             f"carve alike (Note [Schedule memory] in bench/bench_parallel.cc)"})
    return rows


def torch_offload_rows(j, prefix="torch_offload", fits_name="fits_ratio"):
    """bench/torch_offload_bench.py: the fits ratio (target 0.8), the overflow ratio (0.8 for the
    GPT of issue 30; reported for the others) and the NVMe traffic against a step's minimum."""
    unit = j["unit"]
    if "blocked" in j:
        return [{"metric": f"{prefix}_{fits_name}", "value": None, "target": ">= 0.8",
                 "met": False, "what": f"not measurable: st.offload fails on {j['model']['name']}"
                                       f" ({j['blocked']})"}]
    rounds = j["rounds"]
    each = lambda k: ", ".join(f"{r[k]:.3f}" for r in rounds)  # noqa: E731
    med = lambda k: statistics.median(r[k] for r in rounds)  # noqa: E731

    def at_median(ratio, key):  # `key` in the round whose `ratio` is the median
        return min(rounds, key=lambda r: abs(r[ratio] - j[ratio]))[key]

    m = j["model"]
    over_target = 0.8 if prefix == "torch_offload" else None
    over_what = (f"parameters + moments {j['overflow_state_over_host']:.1f}x host_mem "
                 f"{j['overflow_host_mem']} (the rest on NVMe): st.offload "
                 f"{at_median('overflow_ratio', 'overflow_per_s'):.1f} {unit}/s vs plain torch "
                 f"{at_median('overflow_ratio', 'torch_per_s'):.1f} in the median of "
                 f"{len(rounds)} rounds ({each('overflow_ratio')}); pages of "
                 f"{rounds[-1]['overflow_page_bytes'] / 2**20:.3f} MiB; losses within "
                 f"{max(r['max_loss_rel_diff'] for r in rounds):.1e} of torch's")
    rows = [
        ratio_row(f"{prefix}_{fits_name}", j["fits_ratio"], 0.8,
                  f"st.offload {at_median('fits_ratio', 'fits_per_s'):.1f} {unit}/s vs plain torch "
                  f"{at_median('fits_ratio', 'torch_per_s'):.1f}, everything in host_mem "
                  f"{j['fits_host_mem']}, in the median of {len(rounds)} rounds "
                  f"({each('fits_ratio')}); "
                  f"{m['parameters'] / 1e6:.1f}M parameters"),
        ratio_row(f"{prefix}_overflow_ratio", j["overflow_ratio"], over_target, over_what)
        if over_target else {"metric": f"{prefix}_overflow_ratio", "value": j["overflow_ratio"],
                             "target": "report", "met": True, "what": over_what},
    ]
    amp = j["nvme_amplification"]
    mib = lambda b: f"{b / 2**20:.1f} MiB"  # noqa: E731
    amp_what = (f"NVMe bytes read + written per step (overflow) over the least a step moves "
                f"(each parameter read twice and written once, each moment read and written "
                f"once: {mib(j['must_read_bytes_per_step'])} read, "
                f"{mib(j['must_write_bytes_per_step'])} written); median of {len(rounds)} "
                f"rounds ({each('nvme_amplification')}); read "
                f"{mib(med('overflow_nvme_read_bytes_per_step'))} ({each('nvme_read_amplification')}x"
                f"), written {mib(med('overflow_nvme_write_bytes_per_step'))} "
                f"({each('nvme_write_amplification')}x: spilled gradients included)")
    if prefix == "torch_offload":
        rows.append({"metric": "torch_offload_nvme_amplification", "value": amp,
                     "target": "<= 1.3", "met": amp <= 1.3, "what": amp_what})
    else:
        rows.append({"metric": f"{prefix}_nvme_amplification", "value": amp, "target": "report",
                     "met": True, "what": amp_what})
    return rows


# The ViT benchmarks' shape: small images keep a round within minutes on 2 cores.
VIT_ARGS = ["--image-size", "64", "--batch", "8", "--steps", "4"]

BENCHES = {
    "step": {
        "title": "Training step: Strata vs PyTorch, and vs sgemm peak (issue: foundation)",
        "measures": "tokens/s of a full training step (forward, backward, clipping, AdamW) of "
                    "the `small` GPT (6 layers, 384 wide, 6 heads, vocab 256), batch 8 x seq "
                    "256, 2 threads, against PyTorch 1.13 (Debian) running the same model, "
                    "batch and optimizer at its best thread split; and the step's achieved "
                    "GFLOP/s (6N + attention FLOPs per token) against OpenBLAS sgemm 2048^3 "
                    "measured in the same process.",
        "cmd": ["bench/step_vs_torch.sh", "--model", "small", "--batch", "8", "--seq", "256",
                "--threads", "2", "--steps", "5", "--rounds", "3"],
        "rows": step_rows,
    },
    "step_llama": {
        "title": "Training step, LLaMA: Strata vs PyTorch (issue 33)",
        "measures": "the same for `llama-small` (6 layers, 384 wide, 6 query heads over 2 "
                    "key/value heads, SwiGLU 1024 wide, vocab 256), in memory, against the "
                    "PyTorch LLaMA of tests/reference/llama_reference.py (Hugging Face's "
                    "LlamaForCausalLM semantics) at its best thread split.",
        "cmd": ["bench/step_vs_torch.sh", "--model", "llama-small", "--batch", "8", "--seq",
                "256", "--threads", "2", "--steps", "5", "--rounds", "3"],
        "rows": step_rows,
    },
    "io": {
        "title": "NVMe tier: IoEngine vs fio (issue: NVMe tier)",
        "measures": "sequential and random 1 MiB reads and writes at queue depth 16 over a 4 GiB "
                    "file with O_DIRECT, Strata's IoEngine vs fio (io_uring, direct=1, fixed "
                    "buffers and files) alternating in the same run; and the latency of the "
                    "page store's sync RocksDB commit.",
        "cmd": ["bench/io_vs_fio.sh", NVME_DIR, "4G", "1M", "16"],
        "rows": io_rows,
    },
    "io_4k_pages": {
        "title": "NVMe tier, like for like: IoEngine with 4 KiB-page buffers vs fio",
        "measures": "the same as above with `--no-huge-pages`: Strata's buffers on ordinary "
                    "4 KiB pages like fio's (by default Strata puts large I/O buffers on "
                    "transparent huge pages, which keeps a 1 MiB request in one segment). On this "
                    "virtio-blk disk a read's rate follows how physically contiguous each tool's "
                    "buffer happened to be, so the rounds list the segments per MiB Strata's "
                    "buffer got. Both tools' buffers are faulted in by io_uring's pin, from one "
                    "per-CPU free list that hands each process the previous one's frames in "
                    "reverse, so the order of the runs decides which tool gets the contiguous "
                    "layout (Note [4 KiB-page reads on virtio-blk] in "
                    "storage/physical_layout.cc).",
        "cmd": ["env", "STRATA_FLAGS=--no-huge-pages", "bench/io_vs_fio.sh", NVME_DIR, "4G",
                "1M", "16"],
        "rows": io_rows,
    },
    "pages": {
        "title": "Page moves vs memcpy and the IoEngine; Belady vs LRU (issue: memory manager)",
        "measures": "host->device and device->host page moves through the memory manager vs "
                    "memcpy of the same bytes, host<->NVMe page moves vs the IoEngine's raw "
                    "rate, and bytes moved under Belady vs LRU on a training-like trace.",
        "cmd": ["build/tools/strata", "bench", "pages", "--json", "--dir", NVME_DIR],
        "rows": pages_rows,
    },
    "offload": {
        "title": "Offload: overlap, cost, scale and NVMe amplification (issue: unified scheduler)",
        "measures": "Five measurements of `strata bench offload` (bench/bench_offload.cc); "
                    "the sim device computes on one thread and the host work (copies, "
                    "checksums, I/O, AdamW) has the other core, as on a GPU machine, in every "
                    "compared run: (1) overlap: ZeRO-Offload's placement (every block's "
                    "parameters on the device, gradients down, AdamW on the host, each updated "
                    "page uploaded again right after its update) without clipping, on a "
                    "12-layer `small`, the sim link throttled so that a step's traffic takes "
                    "backward's share (2/3) of the compute-only time, vs max(compute-only = the "
                    "in-memory trainer's step, movement-only = the same paged run with "
                    "--movement-only: every move and host update, no kernels); beside it the "
                    "parameters streamed from the host with clipping, the link calibrated to "
                    "the whole compute-only time; (2) tokens/s with 25% device and 50% host "
                    "budgets (rest on NVMe) vs all in memory, same model and batch: a wide, "
                    "shallow model with few tokens per step, whose states rather than "
                    "activations are what does not fit, and the same pair with the kernels on "
                    "both cores; (3) a deep narrow model >= 4x the host budget and >= 16x the "
                    "device budget trains 3 steps, its NVMe rate vs fio's sequential read on "
                    "the same directory; (4) the host pool's eviction: NVMe bytes per step "
                    "under Belady over the plan the Engine learns vs LRU + demote, in (2)'s "
                    "offload configuration and in the demo's; (5) an 80-layer model at >= 64x "
                    "the device budget and >= 16x the host budget (parameters and moments on "
                    "NVMe): its NVMe bytes per steady-state step vs the minimum its page plan "
                    "allows (read and write amplification), and its paged tokens/s vs the same "
                    "model trained in memory, in rounds.",
        "cmd": ["build/tools/strata", "bench", "offload", "--json", "--nvme-dir", NVME_DIR],
        "rows": offload_rows,
    },
    "offload_llama": {
        "title": "Offload far beyond both budgets in a LLaMA shape (issue 33)",
        "measures": "Measurement 5 of `strata bench offload` (above) with the same 80 layers, "
                    "width, heads, batch, budgets and rounds in LLaMA's blocks (RMSNorm, "
                    "grouped-query attention over 2 key/value heads with rotary embeddings, "
                    "SwiGLU of 8/3 the width, untied head): NVMe bytes per steady-state step vs "
                    "the page plan's minimum, and paged tokens/s vs the same model in memory.",
        "cmd": ["build/tools/strata", "bench", "offload", "--json", "--nvme-dir", NVME_DIR,
                "--runs", "5", "--amp-arch", "llama"],
        "rows": lambda j: amplification_rows(j, "llama_"),
    },
    "parallel": {
        "title": "Data, tensor and pipeline parallelism: DP scaling, the Comm vs raw MPI, shard "
                 "cost, comm overlap and OSDP vs ZeRO-3 (issue 14); TP efficiency, pipeline "
                 "bubble and schedule memory (issue 15)",
        "measures": "`strata bench parallel` (bench/bench_parallel.cc), which launches its ranks "
                    "with mpirun itself: (1) all-gather and reduce-scatter through Strata's Comm "
                    "(MPI backend) vs raw MPI_Allgather and MPI_Reduce_scatter_block of the same "
                    "bytes in the same 2 processes, buffers of 1 to 64 MiB per rank; (2) "
                    "`strata train` as 2 data-parallel ranks of 1 thread each vs 1 rank of 2 "
                    "threads, the same model and global batch, tokens/s in rounds; (3) "
                    "`strata train --dp 2 --shard all` (ZeRO-3) vs `--shard none` (replicated), "
                    "both on the paged engine with the same budgets, tokens/s in rounds "
                    "alternating which goes first; (4) the `--shard all` step time vs "
                    "max(compute-only, comm-only), all three measured in each round: comm-only "
                    "is the same run with --movement-only (every collective and copy, no "
                    "kernels), compute-only the compute queue's busy time per step of 2 "
                    "single-rank runs of the per-rank batch at once (no collectives); (5) "
                    "`strata train --dp 2 --shard auto` (OSDP's per-block choice) vs `--shard "
                    "all` with the same budgets, on a host budget where replicating some blocks "
                    "fits but not all: measured step time all / auto in rounds alternating which "
                    "goes first, beside the step times the auto run predicted for its choice and "
                    "for every block sharded (reported, no target); (6) `strata train --tp 2` "
                    "as 2 ranks of 1 thread vs 1 rank of 2 threads, both on the paged engine, "
                    "the same model and global batch, tokens/s in rounds alternating which goes "
                    "first, beside the share of the tp2 step its compute stream waits in its tp "
                    "all-reduces (reported, no target); (7) `strata train --pp 2 --schedule 1f1b` "
                    "with 8 micro-batches, 2 ranks of 1 thread, its step time vs the ideal "
                    "pipeline step T1 / 2 x 9/8, T1 one rank's compute time (the compute queue's "
                    "busy time per step of 2 single-rank runs of the whole model at once), both "
                    "measured in each round; (8) stage 0's peak activation bytes of that pp2 run "
                    "under GPipe vs 1F1B (reported, no target).",
        "cmd": ["build/tools/strata", "bench", "parallel", "--json"],
        "rows": parallel_rows,
    },
    "torch_offload": {
        "title": "PyTorch integration: strata.torch.offload vs plain torch (issues 16, 30)",
        "measures": "tokens/s of a torch GPT (6 layers, 384 wide, vocab 256, tied head; batch 8 "
                    "x seq 128, 2 threads) trained with clipping and AdamW through "
                    "`st.offload` (bench/torch_offload_bench.py) vs the same model, batches and "
                    "torch.optim.AdamW in plain torch, measured in the same round: (1) with "
                    "host_mem holding every page, the integration's own cost (hooks, acquires, "
                    "gradient hand-over, Strata's AdamW); (2) with parameters + moments 4x "
                    "host_mem and the rest on NVMe; and (2)'s NVMe bytes per step against the "
                    "least a step must move (Note [Page size and grouping] in "
                    "python/strata/_layout.py).",
        "cmd": ["env", "PYTHONPATH=build/python", "/usr/bin/python3",
                "bench/torch_offload_bench.py", "--json"],
        "rows": torch_offload_rows,
    },
    "torch_offload_vit": {
        "title": "PyTorch integration on torchvision's vit_b_16 (issue 30)",
        "measures": "images/s of `torchvision.models.vit_b_16` (86M parameters; 64x64 images, "
                    "batch 8, 2 threads) trained through `st.offload` vs plain torch, as above: "
                    "everything in host_mem (target 0.8), and parameters + moments 4x host_mem.",
        "cmd": ["env", "PYTHONPATH=build/python", "/usr/bin/python3",
                "bench/torch_offload_bench.py", "--json", "--model", "vit_b_16"] + VIT_ARGS,
        "rows": lambda j: torch_offload_rows(j, "torch_offload_vit", "ratio"),
    },
    "gpu_step": gpu_entry(
        "On a GPU: model FLOP utilisation of a training step (issue 31)",
        "`strata bench step --device cuda` on gpt2 and gpt2-medium at batch x 1024 tokens, fp32 "
        "(cuBLAS without TF32) and bf16 (tensor cores, fp32 accumulation), each against the "
        "GPU's dense peak at that dtype; then where one step's GPU time goes, from Nsight "
        "Compute over every kernel of a one-block gpt2 step (bench/gpu_kernel_shares.py). Run "
        "on a lent GPU machine by `tools/gpu_check.sh run` (tests/gpu/README.md); its raw "
        "output is kept in bench/results/gpu/.",
        gpu_step_rows),
    "gpu_offload": gpu_entry(
        "On a GPU: offload over real PCIe and the GPU machine's disk (issue 31)",
        "`strata bench offload --device cuda --no-eviction-demo --amp-layers 16` on the GPU "
        "machine's disk: every run on the GPU, nothing throttled. (1) ZeRO-Offload's placement "
        "(parameters on the GPU, AdamW on the host) vs max(compute-only, movement-only); (2) "
        "25% device and 50% host budgets vs in GPU memory; (5) a model at >= 8x --gpu-mem with "
        "parameters and moments on NVMe vs in GPU memory, and its NVMe amplification.",
        gpu_offload_rows),
}


def run(name):
    b = BENCHES[name]
    os.makedirs(NVME_DIR, exist_ok=True)
    print(f"update_benchmarks: running {name}: {' '.join(b['cmd'])}", file=sys.stderr)
    p = subprocess.run(b["cmd"], cwd=ROOT, capture_output=True, text=True)
    sys.stderr.write(p.stderr[-4000:])
    if p.returncode != 0:
        print(f"update_benchmarks: {name} failed with exit code {p.returncode}", file=sys.stderr)
        return False
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if not lines:
        print(f"update_benchmarks: {name} printed no JSON", file=sys.stderr)
        return False
    result = {"name": name, "date": datetime.date.today().isoformat(),
              "command": " ".join(b["cmd"]).replace(ROOT + "/", ""),
              "json": json.loads(lines[-1])}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return True


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def render():
    out = ["# Benchmarks", "",
           "Every figure below is written by `bench/update_benchmarks.py` from the benchmark's "
           "own JSON output (kept in `bench/results/`); none is edited by hand. Each is a ratio "
           "measured side by side in one run on this machine (2 cores, no GPU; see the README), "
           "or, in the sections titled *On a GPU*, on a lent GPU machine (stored with "
           "`--import-gpu`), "
           "because absolute times on a shared machine drift. A target that is missed says "
           "MISSED, with its numbers.", ""]
    for name, b in BENCHES.items():
        path = os.path.join(RESULTS, name + ".json")
        out += [f"## {b['title']}", "", b["measures"], ""]
        if not os.path.exists(path):
            out += ["Not measured yet.", ""]
            continue
        r = json.load(open(path))
        where = (f" on {r['gpu']}; raw output in `{r['source']}`" if b.get("imported") else "")
        out += [f"Reproduce: `{r['command']}` — last run {r['date']}{where}.", "",
                "| metric | value | target | | what |", "|---|---|---|---|---|"]
        for row in b["rows"](r["json"]):
            status = "met" if row["met"] else "**MISSED**"
            if row["target"] == "report":
                status = ""
            out.append(f"| {row['metric']} | {fmt(row['value'])} | {row['target']} | {status} "
                       f"| {row['what']} |")
        out.append("")
    with open(os.path.join(ROOT, "BENCHMARKS.md"), "w") as f:
        f.write("\n".join(out))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("names", nargs="*", help=f"benchmarks to run: {', '.join(BENCHES)}")
    p.add_argument("--render-only", action="store_true")
    p.add_argument("--import-gpu", nargs="+", metavar="DIR",
                   help="store the results a GPU machine wrote (tools/gpu_check.sh run's OUT)")
    args = p.parse_args()
    ok = True
    if args.import_gpu:
        for directory in args.import_gpu:
            import_gpu(directory, ROOT, RESULTS)
    elif not args.render_only:
        for name in args.names or [n for n, b in BENCHES.items() if not b.get("imported")]:
            if name not in BENCHES:
                sys.exit(f"update_benchmarks: unknown benchmark {name}; known: {', '.join(BENCHES)}")
            if BENCHES[name].get("imported"):
                sys.exit(f"update_benchmarks: {name} runs on a GPU machine: run tools/gpu_check.sh "
                         f"there and store its output with --import-gpu")
            ok = run(name) and ok
    render()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
