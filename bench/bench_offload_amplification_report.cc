// `strata bench offload`, measurement 5's flags and JSON fields (the measurement:
// bench/bench_offload_amplification.cc; its floor: bench/bench_offload_nvme_floor.cc).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "memory/tier.h"
#include "bench/bench_offload.h"

namespace strata::bench::offload {
namespace {

// `bytes` / `floor`, or null when the plan puts nothing on NVMe (no floor to divide by).
nlohmann::json Amplification(double bytes, uint64_t floor) {
  return floor > 0 ? nlohmann::json(bytes / double(floor)) : nlohmann::json();
}

// The run's shape, budgets and placement, and the floor's parts.
void AddAmpConfig(const AmpResult& r, const Flags& f, nlohmann::ordered_json& out) {
  const TrainOptions& o = r.paged_options;
  const NvmeFloor& fl = r.floor;
  out["amp_model"] = r.model->shape().description;
  out["amp_arch"] = r.model->shape().arch;
  out["amp_batch"] = o.data.batch;
  out["amp_micro_batch"] = o.data.micro_batch;
  out["amp_seq"] = o.data.seq;
  out["amp_page_bytes"] = fl.page_bytes;
  out["amp_state_bytes"] = fl.state_bytes;
  out["amp_gpu_mem"] = o.budgets.gpu_mem;
  out["amp_host_mem"] = o.budgets.host_mem;
  out["amp_params_on"] = memory::TierName(fl.params);
  out["amp_optimizer_on"] = memory::TierName(fl.optimizer);
  out["amp_param_pages"] = fl.param_pages;
  out["amp_moment_pages"] = fl.moment_pages;
  out["amp_recompute_layers"] = r.rounds.empty() ? 0 : r.rounds.front().paged.recompute_layers;
  out["amp_threads"] = f.threads;
  out["amp_warmup_steps"] = f.amp_warmup_steps;
  out["amp_steps"] = f.amp_steps;
  out["amp_rounds"] = f.amp_rounds;
}

}  // namespace

Status CheckAmplificationFlags(const Flags& f) {
  if (f.amp_layers <= 0 || f.amp_embd <= 0 || f.amp_heads <= 0 || f.amp_batch <= 0 ||
      f.amp_micro_batch < 0 || f.amp_seq <= 0) {
    return Status::InvalidArgument(
        "--amp-layers, --amp-embd, --amp-heads, --amp-batch and --amp-seq must be positive, "
        "--amp-micro-batch >= 0");
  }
  if (f.amp_arch != "gpt2" && f.amp_arch != "llama") {
    return Status::InvalidArgument("--amp-arch must be gpt2 or llama, got '" + f.amp_arch + "'");
  }
  if (f.amp_warmup_steps < 0 || f.amp_steps <= 0 || f.amp_rounds <= 0) {
    return Status::InvalidArgument(
        "--amp-warmup-steps must be >= 0, --amp-steps and --amp-rounds positive, got " +
        std::to_string(f.amp_warmup_steps) + ", " + std::to_string(f.amp_steps) + " and " +
        std::to_string(f.amp_rounds));
  }
  return Status::Ok();
}

void AddAmplificationOptions(CLI::App* cmd, Flags& f) {
  cmd->add_option("--amp-layers", f.amp_layers, "Run 5: layers")->capture_default_str();
  cmd->add_option("--amp-embd", f.amp_embd, "Run 5: width")->capture_default_str();
  cmd->add_option("--amp-heads", f.amp_heads, "Run 5: heads")->capture_default_str();
  cmd->add_option("--amp-batch", f.amp_batch, "Run 5: rows per step")->capture_default_str();
  cmd->add_option("--amp-micro-batch", f.amp_micro_batch, "Run 5: rows per micro-batch")
      ->capture_default_str();
  cmd->add_option("--amp-seq", f.amp_seq, "Run 5: tokens per row (and the context)")
      ->capture_default_str();
  cmd->add_option("--amp-arch", f.amp_arch, "Run 5: the model family, gpt2 or llama")
      ->capture_default_str();
  cmd->add_option("--amp-kv-heads", f.amp_kv_heads, "Run 5, llama: key/value heads")
      ->capture_default_str();
  cmd->add_option("--amp-ffn", f.amp_ffn, "Run 5, llama: the MLP's width (0: 8/3 of the width)")
      ->capture_default_str();
  cmd->add_option("--amp-gpu-mem", f.amp_gpu_mem, "Run 5: --gpu-mem of the paged run")
      ->capture_default_str();
  cmd->add_option("--amp-host-mem", f.amp_host_mem, "Run 5: --host-mem of the paged run")
      ->capture_default_str();
  cmd->add_option("--amp-warmup-steps", f.amp_warmup_steps,
                  "Run 5: paged steps not counted (the host plan is set before step 4)")
      ->capture_default_str();
  cmd->add_option("--amp-steps", f.amp_steps, "Run 5: counted steps per run")
      ->capture_default_str();
  cmd->add_option("--amp-rounds", f.amp_rounds,
                  "Run 5: rounds of (in memory, paged); the median ratio is reported")
      ->capture_default_str();
}

void AddAmplification(const AmpResult& r, const Flags& f, nlohmann::ordered_json& out) {
  AddAmpConfig(r, f, out);
  const NvmeFloor& fl = r.floor;
  out["nvme_read_bytes_per_step"] = r.read_bytes_per_step();
  out["nvme_write_bytes_per_step"] = r.write_bytes_per_step();
  out["nvme_min_read_bytes_per_step"] = fl.read_bytes;
  out["nvme_min_write_bytes_per_step"] = fl.write_bytes;
  out["nvme_read_amplification"] = Amplification(r.read_bytes_per_step(), fl.read_bytes);
  out["nvme_write_amplification"] = Amplification(r.write_bytes_per_step(), fl.write_bytes);
  std::vector<nlohmann::json> read_rounds, write_rounds;
  std::vector<double> ratios, paged_tps, mem_tps;
  bool losses_equal = true;
  for (const AmpRound& round : r.rounds) {
    read_rounds.push_back(Amplification(round.read_bytes_per_step, fl.read_bytes));
    write_rounds.push_back(Amplification(round.write_bytes_per_step, fl.write_bytes));
    ratios.push_back(round.ratio());
    paged_tps.push_back(round.paged.median_tokens_per_s);
    mem_tps.push_back(round.in_memory.median_tokens_per_s);
    losses_equal = losses_equal && round.losses_equal;
  }
  out["nvme_read_amplification_rounds"] = read_rounds;
  out["nvme_write_amplification_rounds"] = write_rounds;
  out["nvme_amplification_target"] = kAmplificationTarget;
  const AmpRound& median = r.median();
  out["scale_vs_memory"] = median.ratio();
  out["scale_vs_memory_target"] = kScaleVsMemoryTarget;
  out["scale_vs_memory_rounds"] = ratios;
  out["scale_vs_memory_paged_tokens_per_s"] = median.paged.median_tokens_per_s;
  out["scale_vs_memory_in_memory_tokens_per_s"] = median.in_memory.median_tokens_per_s;
  out["scale_vs_memory_paged_tokens_per_s_rounds"] = paged_tps;
  out["scale_vs_memory_in_memory_tokens_per_s_rounds"] = mem_tps;
  // Note [CPU bound] in bench/bench_offload.cc: a paged step far above its CPU time waits on the
  // disk, not on the cores.
  out["scale_vs_memory_paged_step_s"] = median.paged.median_step_s;
  out["scale_vs_memory_in_memory_step_s"] = median.in_memory.median_step_s;
  out["scale_vs_memory_paged_cpu_s_per_step"] = median.paged.median_cpu_s;
  out["scale_vs_memory_in_memory_cpu_s_per_step"] = median.in_memory.median_cpu_s;
  out["scale_vs_memory_device_multiple"] = double(fl.state_bytes) / r.paged_options.budgets.gpu_mem;
  out["scale_vs_memory_host_multiple"] = double(fl.state_bytes) / r.paged_options.budgets.host_mem;
  out["scale_vs_memory_losses_equal"] = losses_equal;
}

}  // namespace strata::bench::offload
