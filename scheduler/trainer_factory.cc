#include "scheduler/trainer_factory.h"

#include <algorithm>
#include <optional>

#include "core/data/builtin_corpus.h"
#include "core/data/token_dataset.h"
#include "core/device/create_device.h"
#include "core/kernels/linear.h"
#include "core/util/option.h"
#include "parallel/comm.h"
#include "parallel/grid.h"
#include "scheduler/data_parallel.h"
#include "scheduler/grid_checks.h"
#include "scheduler/in_memory_budget.h"
#include "scheduler/in_memory_trainer.h"
#include "scheduler/model_registry.h"
#include "scheduler/option_ranges.h"
#include "scheduler/paged_trainer.h"
#include "scheduler/pipeline_plan.h"
#include "scheduler/rank_agreement.h"

namespace strata {

namespace {

using enum Option;  // the options named here

// The run-level choices of device, dtype and the NVMe path (TrainOptions' own fields).
Status ValidateDeviceOptions(const TrainOptions& o) {
  auto bad = [](Option at, const std::string& m, OptionNumbers numbers = {}) {
    return AtFault(at, Status::InvalidArgument(m), std::move(numbers));
  };
  if (o.device == "cuda" && o.sim_link_gbps != 0) {
    return bad(kSimLinkGbps, Mention(kSimLinkGbps) +
                                 " models the sim device's link; drop it or use " +
                                 Mention(kDevice) + " sim");
  }
  if (o.dtype != "fp32" && o.dtype != "bf16") {
    return NotOneOf(kDtype, "fp32 or bf16", o.dtype);
  }
  if (o.gds != "auto" && o.gds != "on" && o.gds != "off") {
    return NotOneOf(kGds, "auto, on or off", o.gds);
  }
  if (o.gds == "on" && o.device != "cuda") {
    return bad(kGds, Mention(kGds) + " on moves NVMe pages straight to GPU memory: it needs " +
                         Mention(kDevice) + " cuda");
  }
  if (o.gds == "on") {
    return AtFault(kGds, Status::NotSupported(
                             Mention(kGds) +
                             " on: this strata has no GPUDirect Storage path (cuFile is not built "
                             "in); NVMe pages go through the pinned host pool: use " +
                             Mention(kGds) + " auto or off"));
  }
  return Status::Ok();
}

Status ValidateOptions(const TrainOptions& o) {
  auto bad = [](Option at, const std::string& m, OptionNumbers numbers = {}) {
    return AtFault(at, Status::InvalidArgument(m), std::move(numbers));
  };
  STRATA_RETURN_IF_ERROR(CheckOptionRanges(o));
  if (o.optimizer.lr_schedule != "constant" && o.optimizer.lr_schedule != "cosine") {
    return NotOneOf(kLrSchedule, "'constant' or 'cosine'", o.optimizer.lr_schedule);
  }
  if (o.data.micro_batch < 0 ||
      (o.data.micro_batch > 0 && o.data.batch % o.data.micro_batch != 0)) {
    return bad(kMicroBatch,
               Mention(kMicroBatch) + " " + std::to_string(o.data.micro_batch) + " must divide " +
                   Mention(kBatch) + " " + std::to_string(o.data.batch) + " (e.g. " +
                   Mention(kMicroBatch) + " 1, or 0 for one micro-batch)",
               {{"got", o.data.micro_batch}, {"batch", o.data.batch}});
  }
  if ((o.checkpoints.every > 0 || o.checkpoints.resume) &&
      (o.checkpoints.dir.empty() || o.budgets.nvme_dirs.empty())) {
    return bad(kCkptDir, Mention(o.checkpoints.resume ? kResume : kCkptEvery) + " needs " +
                             Mention(kCkptDir) + " and " + Mention(kNvmeDir) +
                             " (checkpoints are manifests of the NVMe page store)");
  }
  if (o.checkpoints.discard_newer && o.checkpoints.resume_from < 0) {
    return bad(kDiscardNewer, Mention(kDiscardNewer) + " drops the checkpoints newer than " +
                                  Mention(kResumeFrom) + "'s step: give " + Mention(kResumeFrom) +
                                  " STEP with it");
  }
  if (o.budgets.engine == "memory" &&
      (o.checkpoints.every > 0 || o.checkpoints.resume || !o.budgets.nvme_dirs.empty() ||
       o.optimizer.delayed_update || o.movement_only)) {
    return bad(kEngine, Mention(kEngine) + " memory keeps everything on the device: drop " +
                            Mention(kNvmeDir) + ", " + Mention(kCkptEvery) + ", " +
                            Mention(kResume) + ", " + Mention(kDelayedUpdate) + " and " +
                            Mention(kMovementOnly) + ", or use " + Mention(kEngine) + " paged");
  }
  if (o.movement_only && (o.checkpoints.every > 0 || o.checkpoints.resume ||
                          !o.outputs.export_path.empty() || !o.outputs.export_grads_path.empty())) {
    return bad(kMovementOnly, Mention(kMovementOnly) +
                                  " trains nothing (the kernels are skipped): drop " +
                                  Mention(kCkptEvery) + ", " + Mention(kResume) + ", " +
                                  Mention(kExport) + " and " + Mention(kExportGrads));
  }
  if (o.budgets.engine != "auto" && o.budgets.engine != "memory" && o.budgets.engine != "paged") {
    return NotOneOf(kEngine, "auto, memory or paged", o.budgets.engine);
  }
  return ValidateDeviceOptions(o);
}

// --split-ops (Note [Split operators] in scheduler/split_plan.h) against the choices and the
// grid's `dp` ranks.
Status ValidateSplitOps(const TrainOptions& o, int dp) {
  auto bad = [](Option at, const std::string& m) {
    return AtFault(at, Status::InvalidArgument(m));
  };
  // A slice is whole forward chunks of a linear's rows (Note [Linear forward in row chunks] in
  // core/kernels/linear.h).
  if (o.grid.split_ops != "1" && o.grid.split_ops != "2" && o.grid.split_ops != "4" &&
      o.grid.split_ops != "auto") {
    return bad(kSplitOps, Mention(kSplitOps) + " must be 1, 2, 4 (a linear's " +
                              std::to_string(kernels::kLinearChunks) +
                              " forward row chunks cut into whole slices) or auto, got '" +
                              o.grid.split_ops + "'");
  }
  if ((o.grid.split_ops == "2" || o.grid.split_ops == "4") && (dp == 1 || o.grid.shard == "none")) {
    return bad(kSplitOps, Mention(kSplitOps) + " " + o.grid.split_ops +
                              " splits sharded blocks, and this run shards none (" +
                              (dp == 1 ? std::string("one rank") : Mention(kShard) + " none") +
                              "): launch " + Mention(kDp) + " 2 or more with " + Mention(kShard) +
                              " all or auto, or give " + Mention(kSplitOps) + " 1");
  }
  return Status::Ok();
}

// --dp and --shard against the job's ranks (docs/parallel.md). --comm is the CLI's: it chooses
// the Comm before there is a trainer (tools/train_ranks.h).
Status ValidateParallelOptions(const TrainOptions& o) {
  auto bad = [](Option at, const std::string& m, OptionNumbers numbers = {}) {
    return AtFault(at, Status::InvalidArgument(m), std::move(numbers));
  };
  if (o.grid.shard != "none" && o.grid.shard != "all" && o.grid.shard != "auto") {
    return NotOneOf(kShard, "none, all or auto", o.grid.shard);
  }
  const int ranks = scheduler::RanksOf(o.grid);
  if (o.grid.tp == 1 && o.grid.pp == 1 &&
      (o.grid.dp < 0 || (o.grid.dp > 0 && o.grid.dp != ranks))) {
    return bad(kDp,
               Mention(kDp) + " " + std::to_string(o.grid.dp) + " needs " +
                   std::to_string(o.grid.dp) + " ranks and this job has " + std::to_string(ranks) +
                   ": launch it with mpirun -np " + std::to_string(std::max(o.grid.dp, 1)) +
                   " strata train " + Mention(kDp) + " " + std::to_string(o.grid.dp) +
                   " ..., or give " + Mention(kDp) + " " + std::to_string(ranks),
               {{"got", o.grid.dp}, {"ranks", ranks}});
  }
  STRATA_ASSIGN_OR_RETURN(const parallel::Grid grid,
                          parallel::Grid::Make(ranks, o.grid.dp, o.grid.tp, o.grid.pp));
  STRATA_RETURN_IF_ERROR(scheduler::ParsePipeSchedule(o.grid.schedule).status());
  // --micro-batch 0: one micro-batch per data-parallel rank (Note [Data-parallel gradients]).
  const int dp = grid.dp();
  const int micro_rows = o.data.micro_batch > 0 ? o.data.micro_batch : o.data.batch / dp;
  if (o.data.batch % dp != 0 || micro_rows == 0 || (o.data.batch / micro_rows) % dp != 0) {
    return bad(kBatch,
               Mention(kBatch) + " " + std::to_string(o.data.batch) +
                   " does not split into whole micro-batches " + "of " +
                   std::to_string(micro_rows) + " rows over " + std::to_string(dp) +
                   " data-parallel ranks: give a " + Mention(kBatch) + " that is a multiple of " +
                   std::to_string(dp) + (o.data.micro_batch > 0 ? " micro-batches" : "") +
                   " (each rank runs whole micro-batches)",
               {{"got", o.data.batch}, {"micro_batch", micro_rows}, {"dp", dp}});
  }
  STRATA_RETURN_IF_ERROR(ValidateSplitOps(o, dp));
  if ((o.grid.tp > 1 || o.grid.pp > 1) && o.budgets.engine == "memory") {
    return bad(kEngine,
               std::string(o.grid.tp > 1 ? Mention(kTp) + " " + std::to_string(o.grid.tp)
                                         : Mention(kPp) + " " + std::to_string(o.grid.pp)) +
                   " runs the paged engine (each rank pages its part of the model): drop " +
                   Mention(kEngine) + " memory");
  }
  if (dp > 1 && o.grid.shard != "none" && o.budgets.engine == "memory") {
    return bad(kEngine, Mention(kShard) + " " + o.grid.shard +
                            " shards the model state through the page manager: drop " +
                            Mention(kEngine) + " memory (or give " + Mention(kShard) + " none)");
  }
  return Status::Ok();
}

// What a job of several ranks can run on the CUDA backend so far: the 3D grid over NCCL (which
// moves device memory; MPI collectives take host buffers). The rest is refused here, before
// anything is planned, rather than failing on its first collective.
Status CheckTrainsOn(const TrainOptions& o) {
  if (o.device != "cuda" || scheduler::RanksOf(o.grid) == 1) return Status::Ok();
  const std::string job =
      Mention(kDevice) + " cuda: a job of " + std::to_string(scheduler::RanksOf(o.grid)) + " ranks";
  if (o.grid.ranks->backend() != parallel::CommBackend::kNccl) {
    return AtFault(kComm, Status::InvalidArgument(
                              job + " over " + Mention(kComm) + " " +
                              parallel::CommBackendName(o.grid.ranks->backend()) +
                              ", whose collectives take host memory; use " + Mention(kComm) +
                              " nccl (or "
                              "auto) with " +
                              Mention(kDevice) + " cuda"));
  }
  return Status::Ok();
}

// --data's tokens for a model of `c`, checked for a window of `seq` tokens.
Result<TokenDataset> OpenData(const DataOptions& d, const ModelShape& c, int seq) {
  std::optional<TokenDataset> data;
  if (d.path == "builtin") {
    if (c.vocab_size < kByteVocabSize) {
      return AtFault(
          kData,
          Status::InvalidArgument(Mention(kData) + " builtin is byte-level text and needs " +
                                  Mention(kVocab) + " >= 256"),
          {{"vocab", c.vocab_size}});
    }
    data = BuiltinCorpusDataset();
  } else {
    STRATA_ASSIGN_OR_RETURN(TokenDataset opened, TokenDataset::Open(d.path, c.vocab_size));
    data = std::move(opened);
  }
  STRATA_RETURN_IF_ERROR(data->check_window(seq));
  return std::move(*data);
}

// --engine's choice: auto takes the paged trainer as soon as any paging flag (kPagingOptions)
// is given, or when --gpu-mem is below what the in-memory trainer needs.
bool ChoosesPaged(const TrainOptions& o, const Model& m, int seq) {
  if (o.budgets.engine != "auto") return o.budgets.engine == "paged";
  const int ranks = scheduler::RanksOf(o.grid);
  return o.budgets.paging_flag_given || !o.budgets.nvme_dirs.empty() || o.checkpoints.resume ||
         o.optimizer.delayed_update || o.movement_only || !o.checkpoints.dir.empty() ||
         (ranks > 1 && o.grid.shard != "none") || o.grid.tp > 1 || o.grid.pp > 1 ||
         (o.budgets.gpu_mem > 0 && o.budgets.gpu_mem < InMemoryDeviceBytes(o, m, seq));
}

}  // namespace

Result<std::unique_ptr<Trainer>> CreateTrainer(const TrainOptions& given) {
  STRATA_RETURN_IF_ERROR(ValidateOptions(given));
  STRATA_RETURN_IF_ERROR(ValidateParallelOptions(given));
  TrainOptions options = given;
  const int ranks = scheduler::RanksOf(options.grid);
  // --dp 0: the ranks left by --tp and --pp.
  options.grid.dp = ranks / (options.grid.tp * options.grid.pp);
  // Before any data or planning work: a missing GPU is one line, not a failure halfway in.
  STRATA_RETURN_IF_ERROR(CheckDeviceChoice({.kind = options.device}));
  STRATA_RETURN_IF_ERROR(CheckTrainsOn(options));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, ResolveModel(options.model));
  const ModelShape& config = model->shape();
  STRATA_RETURN_IF_ERROR(ValidateGridForModel(options, *model));
  const int seq = options.data.seq > 0 ? options.data.seq : std::min(config.block_size, 256);
  if (seq > config.block_size) {
    return AtFault(kSeq,
                   Status::InvalidArgument(Mention(kSeq) + " " + std::to_string(seq) +
                                           " is above the model's context of " +
                                           std::to_string(config.block_size) + " tokens; lower " +
                                           Mention(kSeq) + " or raise " + Mention(kBlockSize)),
                   {{"got", seq}, {"block_size", config.block_size}});
  }
  STRATA_RETURN_IF_ERROR(CheckTokensPerStep(options.data.batch, seq));
  STRATA_ASSIGN_OR_RETURN(TokenDataset data, OpenData(options.data, config, seq));
  if (!options.outputs.export_dir.empty()) {
    options.outputs.export_config = model->hf_config().dump(2);
  }
  const bool paged = ChoosesPaged(options, *model, seq);
  if (ranks > 1) {  // before any rank plans or allocates: the same step everywhere
    STRATA_ASSIGN_OR_RETURN(const auto shared,
                            scheduler::RankSharedFlags(options, config.description, seq, paged));
    STRATA_RETURN_IF_ERROR(scheduler::CheckRanksAgree(shared, *options.grid.ranks));
  }
  if (paged && ranks > 1 && options.optimizer.delayed_update) {
    return AtFault(kDelayedUpdate,
                   Status::NotSupported(Mention(kDelayedUpdate) + " under " + Mention(kDp) +
                                        " is not built yet; drop it"));
  }
  if (ranks > 1 && options.checkpoints.every > 0 && options.checkpoints.keep < 2) {
    return AtFault(kKeepCheckpoints,
                   Status::InvalidArgument(
                       Mention(kKeepCheckpoints) + " " + std::to_string(options.checkpoints.keep) +
                       " under " + Mention(kDp) + " " + std::to_string(ranks) +
                       ": a job needs at least 2, so that the ranks always share one "
                       "(Note [Checkpoints across ranks] in scheduler/data_parallel.h)"),
                   {{"got", options.checkpoints.keep}, {"min", 2}});
  }
  if (paged) return CreatePagedTrainer(options, std::move(model), seq, std::move(data));
  return CreateInMemoryTrainer(options, std::move(model), seq, std::move(data));
}

}  // namespace strata
