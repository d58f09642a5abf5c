// `strata bench step`: training throughput of one model and batch, as tokens/s and as the
// fraction of this machine's sgemm peak that the step achieves (both measured in this run). With
// --device cuda the peak is the GPU's (core/device/gpu_peak.h: a table of known GPUs, else its
// properties), reported as TFLOP/s and peak_fraction next to the same fields: its fp32 peak, or
// with --dtype bf16 its bf16 tensor-core peak (null when the table does not know the GPU). On
// the sim device bf16 runs the fp32 GEMMs on rounded operands, so the sgemm peak stays the limit.
//
// FLOPs per token (PaLM's accounting, what llm.c reports): 6 * N_matmul + 12 * L * C * T, with
// N_matmul = 12 * L * C^2 + V * C the weights that take part in matmuls (the tied head
// included, wpe and LayerNorm/bias excluded) and the second term the attention matmuls
// (q k^T and att v, forward and backward, counted without the causal half).
#include <algorithm>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/device/gpu_peak.h"
#include "scheduler/trainer_factory.h"
#include "bench/bench_gemm.h"
#include "bench/bench_commands.h"

namespace strata::bench {

double FlopsPerToken(const ModelShape& m, int T) {
  const double L = m.n_layer, C = m.n_embd;
  return 6.0 * double(m.matmul_params) + 12.0 * L * C * T;
}

// The report of a run of `o` (`steps` timed) whose median step made `median` tokens/s: against
// the sgemm peak measured now (sim), or the GPU's peak at --dtype (cuda).
Result<nlohmann::ordered_json> StepReport(const TrainOptions& o, int steps, const Trainer& trainer,
                                          double median) {
  const ModelShape& c = trainer.shape();
  const int T = trainer.seq();
  const double gflops = median * FlopsPerToken(c, T) / 1e9;
  GpuPeak gpu;
  if (o.device == "cuda") {
    STRATA_ASSIGN_OR_RETURN(gpu, CudaGpuPeak(0));
  }
  const bool bf16 = o.dtype == "bf16";
  const double gpu_tflops = bf16 ? gpu.bf16_tflops : gpu.fp32_tflops;
  const double peak =
      o.device == "cuda" ? gpu_tflops * 1e3 : MeasureSgemmPeak(2048, o.threads, 3).peak();
  nlohmann::ordered_json out;  // doubles print with round-trip precision, NaN as null
  out["bench"] = "step";
  out["device"] = o.device;
  out["dtype"] = o.dtype;
  out["model"] = o.model.preset;
  out["arch"] = c.arch;
  out["params"] = c.num_params;
  out["batch"] = o.data.batch;
  out["seq"] = T;
  out["threads"] = o.threads;
  out["steps"] = steps;
  out["tokens_per_s"] = median;
  out["flops_per_token"] = FlopsPerToken(c, T);
  out["gflops"] = gflops;
  out["gemm_peak_gflops"] = peak;
  out["gemm_fraction"] = peak > 0 ? nlohmann::ordered_json(gflops / peak) : nullptr;
  if (o.device == "cuda") {
    out["gpu"] = gpu.name;
    out["tflops"] = gflops / 1e3;
    out["peak_tflops"] = gpu_tflops;  // at the step's dtype; 0: not known for bf16
    out["peak_source"] = gpu.source;
    out["peak_fraction"] = out["gemm_fraction"];
  }
  return out;
}

void AddBenchStepCommand(CLI::App& bench, Status& status) {
  struct Flags {
    TrainOptions o;
    int warmup_steps = 2;
  };
  auto f = std::make_shared<Flags>();
  f->o.steps = 8;
  f->o.threads = 2;
  CLI::App* cmd = bench.add_subcommand(
      "step", "Training tokens/s and achieved GFLOP/s vs sgemm peak (median of --steps)");
  cmd->add_option("--model", f->o.model.preset, "Model preset (either family's)")
      ->capture_default_str();
  cmd->add_option("--arch", f->o.model.arch, "Model family: gpt2 or llama (default: the preset's)");
  cmd->add_option("--batch", f->o.data.batch, "Rows per step")->capture_default_str();
  cmd->add_option("--seq", f->o.data.seq, "Tokens per row (default min(context, 256))");
  cmd->add_option("--steps", f->o.steps, "Timed steps")->capture_default_str();
  cmd->add_option("--warmup-steps", f->warmup_steps, "Untimed steps first")->capture_default_str();
  cmd->add_option("--threads", f->o.threads, "Compute threads")->capture_default_str();
  cmd->add_option("--device", f->o.device, "Device backend: sim or cuda")
      ->check(CLI::IsMember({"sim", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--dtype", f->o.dtype, "Compute dtype: fp32 or bf16 (as strata train)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->callback([f, cmd, &status] {
    TrainOptions o = f->o;
    o.model.preset_given = cmd->count("--model") > 0;
    if (o.steps <= 0 || f->warmup_steps < 0) {
      status = Status::InvalidArgument("--steps must be positive, --warmup-steps >= 0");
      return;
    }
    o.steps += f->warmup_steps;
    auto trainer = CreateTrainer(o);
    if (!trainer.ok()) {
      status = trainer.status();
      return;
    }
    std::vector<double> tps;
    Status st = (*trainer)->run([&](const StepStats& s) {
      if (s.step > f->warmup_steps) tps.push_back(s.tokens_per_s);
    });
    if (!st.ok()) {
      status = st;
      return;
    }
    std::sort(tps.begin(), tps.end());
    auto report = StepReport(o, f->o.steps, **trainer, tps[tps.size() / 2]);
    if (!report.ok()) {
      status = report.status();
      return;
    }
    std::printf("%s\n", report->dump().c_str());
  });
}

}  // namespace strata::bench
