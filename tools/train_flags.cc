#include "tools/train_flags.h"

#include "core/util/sizes.h"
#include "scheduler/option_ranges.h"
#include "scheduler/trainer_factory.h"
#include "tools/option_words.h"

namespace strata::tools {
namespace {

// The model's shape and the data: --model, the shape overrides, --data, --batch, --seq, --steps.
void AddModelAndDataOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--model", o.model.preset,
                  "Model preset: tiny, small (~10M, vocab 256), gpt2, gpt2-medium, gpt2-large, "
                  "gpt2-xl; llama-tiny, llama-small, tinyllama-1.1b, llama3.2-1b, llama2-7b, "
                  "llama3-8b")
      ->capture_default_str();
  cmd->add_option("--arch", o.model.arch,
                  "Model family: gpt2 or llama (default: the --model preset's, or --init's)");
  cmd->add_option("--n-kv-head", flags->n_kv_head,
                  "LLaMA override: key/value heads (divides --n-head; grouped-query attention)");
  cmd->add_option("--ffn-dim", flags->ffn_dim, "LLaMA override: the SwiGLU MLP's width");
  cmd->add_option("--rope-theta", flags->rope_theta, "LLaMA override: the rotary base");
  cmd->add_option("--norm-eps", flags->norm_eps, "LLaMA override: RMSNorm's epsilon");
  cmd->add_flag("--tie-embeddings", flags->tie_embeddings,
                "LLaMA: the head reads embed_tokens (no lm_head), as Llama 3.2 1B/3B");
  cmd->add_option("--n-layer", flags->n_layer, "Override: number of transformer blocks");
  cmd->add_option("--n-head", flags->n_head, "Override: attention heads");
  cmd->add_option("--n-embd", flags->n_embd, "Override: embedding width (divisible by heads)");
  cmd->add_option("--vocab", flags->vocab, "Override: vocabulary size");
  cmd->add_option("--block-size", flags->block_size, "Override: the model's context length");
  cmd->add_option("--data", o.data.path, "Training data: builtin, a text file or a .bin token file")
      ->capture_default_str();
  cmd->add_option("--batch", o.data.batch, "Rows per step (B)")->capture_default_str();
  cmd->add_option("--seq", o.data.seq, "Tokens per row (T); default min(context, 256)");
  cmd->add_option("--steps", o.steps,
                  "Optimizer steps (0 with --export writes the initial weights)")
      ->capture_default_str();
}

// AdamW, the schedule, clipping, the seed and threads.
void AddOptimizerOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--lr", o.optimizer.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--min-lr", o.optimizer.min_lr, "Cosine schedule floor (default 10% of --lr)");
  cmd->add_option("--warmup", o.optimizer.warmup, "Linear warmup steps")->capture_default_str();
  cmd->add_option("--lr-schedule", o.optimizer.lr_schedule, "constant or cosine")
      ->capture_default_str();
  cmd->add_option("--weight-decay", o.optimizer.weight_decay,
                  "AdamW decoupled weight decay, on tensors with 2+ dims only")
      ->capture_default_str();
  cmd->add_option("--beta1", o.optimizer.beta1, "AdamW beta1")->capture_default_str();
  cmd->add_option("--beta2", o.optimizer.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--eps", o.optimizer.eps, "AdamW epsilon")->capture_default_str();
  cmd->add_option("--grad-clip", o.optimizer.grad_clip,
                  "Clip gradients to this global L2 norm (0: off)")
      ->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the initialisation")->capture_default_str();
  cmd->add_option("--threads", o.threads, "Compute threads (TBB and OpenBLAS); 0 = all cores")
      ->capture_default_str();
}

// Weights in and out, the device and its budget.
void AddWeightsAndDeviceOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--init", o.model.init_path,
                  "Start from these weights (safetensors, HF GPT-2 names)");
  cmd->add_option("--export", o.outputs.export_path, "Write the final weights here (safetensors)");
  cmd->add_option("--export-dir", o.outputs.export_dir,
                  "Write the final weights as a Hugging Face model directory (config.json and "
                  "model.safetensors), which --init reads back");
  cmd->add_option("--export-grads", o.outputs.export_grads_path,
                  "Write step 1's gradients (before clipping) here (safetensors)");
  cmd->add_option("--device", o.device,
                  "Device backend: sim (host memory, the CPU kernels) or cuda (an NVIDIA GPU, "
                  "the CUDA kernels; several ranks: over NCCL)")
      ->capture_default_str();
  cmd->add_option("--dtype", o.dtype,
                  "Compute dtype: fp32, or bf16 (GEMM operands rounded to bf16, fp32 "
                  "accumulation; weights, gradients and AdamW moments stay fp32)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--gds", o.gds,
                  "GPUDirect Storage for NVMe <-> GPU pages: auto (when built with cuFile and "
                  "the filesystem supports it; this build: off), on (refused without it), off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--gpu-mem", flags->gpu_mem,
                  "Device memory budget (e.g. 512M, 2G); default: what the run needs");
  cmd->add_option("--sim-link-gbps", o.sim_link_gbps,
                  "Sim device: host<->device copy rate in GB/s, to model PCIe (0: memcpy speed)");
}

// Checkpoints and resume (CheckpointOptions), among the paging options in --help's order.
void AddCheckpointOptions(CLI::App* cmd, TrainFlags* flags) {
  CheckpointOptions& c = flags->o.checkpoints;
  cmd->add_option("--ckpt-dir", c.dir,
                  "Checkpoint records (the state itself: manifests of the --nvme-dir page store)");
  cmd->add_option("--ckpt-every", c.every, "Checkpoint after every N steps (0: never)")
      ->capture_default_str();
  cmd->add_flag("--resume", c.resume,
                "Continue from the newest checkpoint in --ckpt-dir (same model, data, optimizer, "
                "batch, grid, dirs); refused when there is none (a run stopped before its first "
                "checkpoint starts again without --resume)");
  cmd->add_option("--resume-from", c.resume_from,
                  "Resume from this listed checkpoint step instead of the newest (implies "
                  "--resume; `strata ckpt list` shows them); newer checkpoints need "
                  "--discard-newer");
  cmd->add_flag("--discard-newer", c.discard_newer,
                "With --resume-from: drop the checkpoints newer than its step (the resumed run "
                "writes its own); without it such a resume is refused, naming them");
  cmd->add_option("--keep-checkpoints", c.keep,
                  "Checkpoints kept (the record lists the K newest; older manifests are deleted)")
      ->capture_default_str();
}

// The paged engine: host and NVMe tiers, pages, placement, checkpoints.
void AddPagingOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--host-mem", flags->host_mem,
                  "Pinned host pool budget (paged engine); default: every page of state");
  cmd->add_option("--nvme-dir", o.budgets.nvme_dirs,
                  "NVMe tier directory (repeatable: pages stripe across them); must be empty");
  cmd->add_option("--nvme-mem", flags->nvme_mem,
                  "NVMe slot capacity across --nvme-dir; default: every page of state once, room "
                  "for what the host pool stages, and the --keep-checkpoints checkpoints");
  cmd->add_option("--page-size", flags->page_size,
                  "Page size of model state (power of two >= 4K); default 16M");
  cmd->add_option("--params-on", o.budgets.params_on,
                  "Home of parameters: device, host, nvme or auto")
      ->capture_default_str();
  cmd->add_option("--optimizer-on", o.budgets.optimizer_on,
                  "Home of the AdamW moments: host, nvme or auto (device: not yet)")
      ->capture_default_str();
  cmd->add_option("--micro-batch", o.data.micro_batch,
                  "Rows per micro-batch (divides --batch; gradients accumulate); 0 = --batch");
  cmd->add_option("--micro-batch-order", o.budgets.micro_batch_order,
                  "With micro-batches: layer-major (every micro-batch through a block while it is "
                  "on the device), micro-batch-major, or auto (the plan's choice by predicted "
                  "traffic, printed first)")
      ->capture_default_str();
  cmd->add_option(
         "--recompute", o.budgets.recompute,
         "Activation checkpointing per block: none, all or auto (when the budget needs it)")
      ->capture_default_str();
  cmd->add_option("--trace", o.outputs.trace_path,
                  "Write a Chrome trace (Perfetto) of every op and move: one track per queue");
  AddCheckpointOptions(cmd, flags);
  cmd->add_flag("--delayed-update", o.optimizer.delayed_update,
                "Opt-in: AdamW of step s runs during step s+1, whose compute uses the parameters "
                "one update behind (ZeRO-Offload's DPU); not bit-identical to exact training");
  cmd->add_flag("--movement-only", o.movement_only,
                "Measure the movement alone: every page move, prefetch and optimizer update of "
                "the paged engine runs, the device kernels do not (losses read 0); its step time "
                "is the movement-only time of this configuration");
  cmd->add_option("--host-eviction", o.budgets.host_eviction,
                  "How the host pool picks what to drop: belady (the order of a step, learned "
                  "from step 2), lru (least recently used, optimizer moments first) or auto "
                  "(belady, lru in layer-major order)")
      ->capture_default_str();
}

// Data, tensor and pipeline parallelism (docs/parallel.md): the ranks come from mpirun.
void AddParallelOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--dp", o.grid.dp,
                  "Data-parallel ranks (launch with mpirun -np N); 0 = the ranks / (tp * pp)")
      ->capture_default_str();
  cmd->add_option("--tp", o.grid.tp,
                  "Tensor-parallel ranks per block (Megatron-LM: heads, MLP columns and the "
                  "vocabulary split; ranks are tp innermost, then dp, then pp)")
      ->capture_default_str();
  cmd->add_option("--pp", o.grid.pp,
                  "Pipeline stages, each a contiguous range of blocks (--pp-partition) run in "
                  "--schedule's order")
      ->capture_default_str();
  cmd->add_option("--schedule", o.grid.schedule, "Pipeline schedule: gpipe or 1f1b")
      ->capture_default_str();
  cmd->add_option("--pp-partition", o.grid.pp_partition,
                  "Blocks per pipeline stage: uniform, auto (balanced by measured block times) "
                  "or N0,N1,... (one count per stage)")
      ->capture_default_str();
  cmd->add_option("--comm", o.grid.comm,
                  "Collectives: mpi (host buffers), nccl (GPU buffers) or auto (nccl on a cuda "
                  "device, else mpi; without mpirun: one rank, no MPI)")
      ->capture_default_str();
  cmd->add_option("--shard", o.grid.shard,
                  "Model state across data-parallel ranks: none (replicated), all (ZeRO-3: every "
                  "block sharded through the page manager) or auto (OSDP: each block sharded or "
                  "replicated, chosen to minimise the predicted step time under the rank's "
                  "budget)")
      ->capture_default_str();
  cmd->add_option("--split-ops", o.grid.split_ops,
                  "Operator splitting of sharded blocks: 1, 2 or 4 (gather and compute their MLP "
                  "weights in that many slices, so only a slice is live on the device) or auto "
                  "(split only when whole blocks do not fit --gpu-mem)")
      ->capture_default_str();
  cmd->add_option("--comm-timeout", o.grid.comm_timeout_s,
                  "Seconds a collective may take before the run fails (a dead or hung rank)")
      ->capture_default_str();
}

// Which engine, and what the run writes besides progress.
void AddEngineAndOutputOptions(CLI::App* cmd, TrainFlags* flags) {
  TrainOptions& o = flags->o;
  cmd->add_option("--engine", o.budgets.engine,
                  "memory (all state on the device), paged (the Engine), or auto: paged when a "
                  "paging flag is given or --gpu-mem is below the in-memory need")
      ->capture_default_str();
  cmd->add_option("--log-json", flags->log_json,
                  "Write one JSON object per step: step, loss, tokens_per_s, elapsed_s, lr, "
                  "grad_norm, clipped; the paged engine adds moved_bytes {h2d, d2h, nvme_read, "
                  "nvme_write}, overlap, compute_comm_s; peak_bytes {device; paged: host, nvme, "
                  "activations}");
  cmd->add_option("--log-level", flags->log_level, "debug, info, warn, error or off")
      ->capture_default_str();
}

}  // namespace

void AddTrainFlags(CLI::App* cmd, TrainFlags* flags) {
  AddModelAndDataOptions(cmd, flags);
  AddOptimizerOptions(cmd, flags);
  AddWeightsAndDeviceOptions(cmd, flags);
  AddPagingOptions(cmd, flags);
  AddEngineAndOutputOptions(cmd, flags);
  AddParallelOptions(cmd, flags);
}

Status ApplyFlags(TrainFlags& f, const CLI::App& cmd) {
  TrainOptions& o = f.o;
  o.model.preset_given = cmd.count("--model") > 0;
  if (cmd.count("--n-layer")) o.model.n_layer = f.n_layer;
  if (cmd.count("--n-head")) o.model.n_head = f.n_head;
  if (cmd.count("--n-embd")) o.model.n_embd = f.n_embd;
  if (cmd.count("--vocab")) o.model.vocab_size = f.vocab;
  if (cmd.count("--block-size")) o.model.block_size = f.block_size;
  if (cmd.count("--n-kv-head")) o.model.n_kv_head = f.n_kv_head;
  if (cmd.count("--ffn-dim")) o.model.ffn_dim = f.ffn_dim;
  if (cmd.count("--rope-theta")) o.model.rope_theta = f.rope_theta;
  if (cmd.count("--norm-eps")) o.model.norm_eps = f.norm_eps;
  if (cmd.count("--tie-embeddings")) o.model.tie_embeddings = f.tie_embeddings;
  if (!o.outputs.export_dir.empty()) {
    if (!o.outputs.export_path.empty()) {
      return Status::InvalidArgument(
          "--export and --export-dir both write the final weights; give one of them");
    }
    o.outputs.export_path = o.outputs.export_dir + "/model.safetensors";
  }
  if (!f.gpu_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.budgets.gpu_mem, ParseBytes(f.gpu_mem, "--gpu-mem"));
  }
  if (!f.host_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.budgets.host_mem, ParseBytes(f.host_mem, "--host-mem"));
  }
  if (!f.nvme_mem.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.budgets.nvme_mem, ParseBytes(f.nvme_mem, "--nvme-mem"));
  }
  if (!f.page_size.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.budgets.page_bytes, ParseBytes(f.page_size, "--page-size"));
  }
  if (cmd.count("--resume-from") > 0) o.checkpoints.resume = true;
  for (const Option option : kPagingOptions) {
    if (cmd.count(FlagOf(option)) > 0) o.budgets.paging_flag_given = true;
  }
  // Every number, with its flag; a sentinel ("0: the default") given explicitly is refused.
  return CheckOptionRanges(o, [&](Option option) { return cmd.count(FlagOf(option)) > 0; });
}

}  // namespace strata::tools
