#include "scheduler/paged_trainer.h"

#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <optional>
#include <vector>

#include "core/device/create_device.h"
#include "core/device/device.h"
#include "core/util/log.h"
#include "core/util/machine_memory.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "memory/memory_manager.h"
#include "scheduler/checkpoint.h"
#include "scheduler/data_parallel.h"
#include "scheduler/engine.h"
#include "scheduler/export_dir.h"
#include "scheduler/machine_fit.h"
#include "scheduler/memory_plan.h"
#include "scheduler/model_registry.h"
#include "scheduler/paged_trainer_impl.h"
#include "scheduler/slot_sizes.h"
#include "scheduler/state_pages.h"
#include "scheduler/trace.h"

namespace strata {
namespace internal {

using memory::Role;

// Setup, in order, one step each: the paging flags, the grid (scheduler/rank_groups.h) and the
// shards this rank holds (scheduler/shard_choice.h), the page plan, the memory plan, the device,
// the NVMe tier and its checkpoint record (scheduler/nvme_setup.h), the memory manager with the
// model's initial state or a checkpoint's (paged_trainer_state.cc), the Engine, and the writer of
// checkpoints (scheduler/checkpoint_writer.h) that takes over the record.
Status PagedTrainer::setup() {
  threads_ = o_.threads > 0 ? o_.threads : tbb::info::default_concurrency();
  STRATA_ASSIGN_OR_RETURN(const uint64_t page, checked_page_bytes());
  STRATA_RETURN_IF_ERROR(check_page_count(page));
  STRATA_RETURN_IF_ERROR(make_grid());
  STRATA_RETURN_IF_ERROR(make_shards());
  STRATA_ASSIGN_OR_RETURN(StatePages sp, StatePages::Make(layout_, page,
                                                          o_.optimizer.delayed_update, &shards_));
  pages_ = std::make_unique<StatePages>(std::move(sp));
  STRATA_RETURN_IF_ERROR(make_plan());
  STRATA_RETURN_IF_ERROR(check_fits_machine());
  STRATA_RETURN_IF_ERROR(create_device());
  scheduler::CheckpointRecord record;  // in force (nvme_setup.h); empty without --nvme-dir
  if (!o_.budgets.nvme_dirs.empty()) {
    STRATA_ASSIGN_OR_RETURN(record, open_nvme());
  }
  STRATA_RETURN_IF_ERROR(create_memory());
  STRATA_RETURN_IF_ERROR(load_state());
  STRATA_RETURN_IF_ERROR(create_engine());
  if (checkpoints_on()) create_checkpoint_writer(std::move(record));
  timeline_.set_keep_all(!o_.outputs.trace_path.empty());
  return Status::Ok();
}

// --page-size (0: the default) and --host-eviction, checked.
Result<uint64_t> PagedTrainer::checked_page_bytes() const {
  const uint64_t page =
      o_.budgets.page_bytes > 0 ? o_.budgets.page_bytes : memory::kDefaultPageBytes;
  if (page < memory::kMinPageBytes || (page & (page - 1)) != 0) {
    return AtFault(
        Option::kPageSize,
        Status::InvalidArgument(Mention(Option::kPageSize) + " " + FormatBytes(page) +
                                " must be a power of two of at least 4K (e.g. 64K, 16M)"),
        {{"got", FaultNumber(page)}});
  }
  if (o_.budgets.host_eviction != "belady" && o_.budgets.host_eviction != "lru" &&
      o_.budgets.host_eviction != "auto") {
    return AtFault(Option::kHostEviction,
                   Status::InvalidArgument(Mention(Option::kHostEviction) +
                                           " must be 'auto', 'belady' or 'lru', got '" +
                                           o_.budgets.host_eviction + "'"));
  }
  return page;
}

// The device, its arena capped at the plan's bytes (the sim device's; a GPU's is the plan's).
Status PagedTrainer::create_device() {
  SimDeviceOptions dopt;
  dopt.capacity_bytes = plan_.device_bytes;
  dopt.link_gbps = o_.sim_link_gbps;
  const int ordinal = scheduler::CudaOrdinalOf(o_.grid);
  STRATA_ASSIGN_OR_RETURN(device_,
                          CreateDevice({.kind = o_.device, .cuda_ordinal = ordinal}, dopt));
  return Status::Ok();
}

// Before the page plan is built: its tables hold an entry per page, so a tiny --page-size on
// a large model would cost gigabytes of bookkeeping before any budget is checked.
Status PagedTrainer::check_page_count(uint64_t page) const {
  const uint64_t roles = o_.optimizer.delayed_update ? 5 : 4;
  const uint64_t state_bytes = uint64_t(layout_.total_numel) * 4 * roles;
  // Each (block, role) starts a page of its own: at most one more page each.
  const uint64_t pages = state_bytes / page + uint64_t(layout_.num_blocks()) * roles;
  if (pages <= kMaxStatePages) return Status::Ok();
  return AtFault(
      Option::kPageSize,
      Status::InvalidArgument(Mention(Option::kPageSize) + " " + FormatBytes(page) + " cuts the " +
                              FormatBytes(state_bytes) + " of model state of " +
                              model_->shape().description + " into about " + std::to_string(pages) +
                              " pages, above the " + std::to_string(kMaxStatePages) +
                              " pages one run may have; raise " + Mention(Option::kPageSize) +
                              " (e.g. 16M) or train a smaller model"),
      {{"got", FaultNumber(page)},
       {"pages", FaultNumber(pages)},
       {"max", FaultNumber(kMaxStatePages)}});
}

// After the plan, before the device arena is mapped (scheduler/machine_fit.h): the sim device's
// slots, activations and tokens, the host pool, and the whole-model staging buffers.
Status PagedTrainer::check_fits_machine() const {
  RamNeed need;
  if (o_.device == "sim") {
    need.device_bytes = plan_.acts_bytes + plan_.tokens_bytes + plan_.constants_bytes +
                        plan_.embedding_part_bytes + plan_.slice_bytes +
                        scheduler::TotalBytes(plan_.slot_sizes);
  }
  need.host_bytes = plan_.host_bytes;
  // --init and --export go block by block (paged_trainer_state.cc): a whole block and this
  // rank's slice of it.
  int64_t largest = 0;
  for (const BlockSpec& b : full_layout_.blocks) largest = std::max(largest, b.numel);
  const uint64_t block_bytes = uint64_t(largest) * 4 * 2;
  if (!o_.model.init_path.empty() || !o_.outputs.export_path.empty() ||
      !o_.outputs.export_grads_path.empty()) {
    need.staging_bytes = block_bytes;
  }
  return strata::CheckFitsMachine(
      need, ReadMachineMemory(), "the paged engine for " + model_->shape().description,
      "lower " + Mention(Option::kGpuMem) + " and " + Mention(Option::kHostMem) +
          " (left out, they hold everything: every block on the device, "
          "every page in the host pool) and give " +
          Mention(Option::kNvmeDir) + " for the rest of the state");
}

Status PagedTrainer::make_plan() {
  scheduler::MemoryPlanInput in;
  in.model = &rank_model();
  in.layout = &gathered_layout_;  // slots hold sharded blocks gathered
  in.micro_rows = micro_rows();
  in.batch = rank_rows();
  in.seq = seq_;
  in.embedding_part_bytes = ranks() > 1 && (!piped() || groups_.pipe().first())
                                ? uint64_t(shards_.gathered_floats(0)) * 4
                                : 0;
  in.gpu_mem = o_.budgets.gpu_mem;
  in.host_mem = o_.budgets.host_mem;
  in.has_nvme = !o_.budgets.nvme_dirs.empty();
  in.page_bytes = pages_->page_bytes();
  in.param_pages = pages_->pages_of_role(Role::kParam);
  in.grad_pages = pages_->pages_of_role(Role::kGrad);
  // The master copy (--delayed-update) lives with the optimizer's state.
  in.moment_pages = pages_->pages_of_role(Role::kAdamM) + pages_->pages_of_role(Role::kAdamV) +
                    (o_.optimizer.delayed_update ? pages_->pages_of_role(Role::kMaster) : 0);
  in.params_on = o_.budgets.params_on;
  in.optimizer_on = o_.budgets.optimizer_on;
  in.recompute = o_.budgets.recompute;
  in.micro_batch_order = o_.budgets.micro_batch_order;
  if (shards_.any_sharded() && rank_rows() > micro_rows()) {
    in.micro_batch_order = "layer-major";
    in.order_set_by = "sharded blocks are gathered once for all of a rank's micro-batches";
  }
  in.stage.tp = o_.grid.tp;  // a tp rank's activations are its slice's widths
  in.tied_head = piped() || rank_model().head_ties_embedding();  // as the engine's program
  if (piped()) {  // a stage's own layers, its micro-batches in flight (Note [Stage activations])
    in.micro_batch_order = "micro-batch-major";
    in.order_set_by = "the pipeline (" + Mention(Option::kPp) + " " + std::to_string(o_.grid.pp) +
                      ") runs each stage's "
                      "micro-batches in " +
                      Mention(Option::kSchedule) + " " + o_.grid.schedule + "'s order";
    const scheduler::PipeStage& pipe = groups_.pipe();
    in.stage = {.first_layer = pipe.first_layer(),
                .layers = pipe.layers(),
                .in_flight = pipe.in_flight,
                .with_head = pipe.last(),
                .tp = o_.grid.tp};
  }
  STRATA_ASSIGN_OR_RETURN(plan_, plan_split(in));
  STRATA_RETURN_IF_ERROR(log_first_line());
  Logger("train")->info("paged engine: {} pages of {} ({} of state); {}", pages_->num_pages(),
                        FormatBytes(pages_->page_bytes()),
                        FormatBytes(pages_->plan().total_bytes()), plan_.to_string());
  return Status::Ok();
}

Status PagedTrainer::create_memory() {
  memory::MemoryManagerOptions mo;
  mo.page_bytes = pages_->page_bytes();
  mo.num_pages = pages_->num_pages();
  mo.host_bytes = plan_.host_bytes;
  mo.device = device_.get();  // the pool is pinned for the device's copies
  mo.nvme = nvme_.get();
  // Small write-back groups: a group's later pages stay resident as clean copies, and in a
  // training step most of them are gradients discarded after AdamW or parameters updated again
  // before they are evicted, so their writes were wasted. Cost configuration, NVMe writes per
  // step: 615 MiB with groups of 64 (the manager's default), 503 with 8, 489 with 1 (one commit
  // each); the step time did not change here, but on a real drive writes cost bandwidth and
  // endurance.
  mo.write_back_batch_pages = kWriteBackGroupPages;
  mo.policy = belady() ? memory::EvictionPolicy::kBelady : memory::EvictionPolicy::kLru;
  STRATA_ASSIGN_OR_RETURN(mm_, memory::MemoryManager::Create(mo));
  return Status::Ok();
}

Status PagedTrainer::create_engine() {
  scheduler::EngineOptions eo;
  eo.model = &rank_model();
  eo.layout = &layout_;
  eo.pages = pages_.get();
  eo.memory = mm_.get();
  eo.device = device_.get();
  eo.timeline = &timeline_;
  eo.plan = plan_;
  eo.batch = rank_rows();
  eo.micro_rows = micro_rows();
  eo.comm = o_.grid.ranks;
  eo.global_batch = o_.data.batch;
  eo.tp_comm = groups_.tp();
  if (piped()) eo.pipe = &groups_.pipe();
  eo.shards = &shards_;
  if (split_.any_split()) {  // the slices' own Comm (slice_gather.h)
    STRATA_ASSIGN_OR_RETURN(slice_comm_,
                            parallel::CreateComm({.backend = o_.grid.ranks->backend(),
                                                  .timeout_s = o_.grid.comm_timeout_s}));
    eo.split = &split_;
    eo.slice_comm = slice_comm_.get();
  }
  eo.seq = seq_;
  eo.threads = threads_;
  eo.beta1 = o_.optimizer.beta1;
  eo.beta2 = o_.optimizer.beta2;
  eo.eps = o_.optimizer.eps;
  eo.weight_decay = o_.optimizer.weight_decay;
  eo.grad_clip = o_.optimizer.grad_clip;
  eo.delayed_update = o_.optimizer.delayed_update;
  eo.skip_kernels = o_.movement_only;
  eo.dtype = ComputeDtype(o_.dtype);
  eo.host_access_plan = belady() && nvme_ != nullptr;
  STRATA_ASSIGN_OR_RETURN(engine_, Engine::Create(eo));
  return Status::Ok();
}

Status PagedTrainer::run(const std::function<void(const StepStats&)>& on_step) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<int32_t> tokens(size_t(2) * o_.data.batch * seq_);
  std::vector<int32_t> mine(size_t(2) * rank_rows() * seq_);  // this rank's rows of `tokens`
  // Counters at the end of the previous step's compute (EngineStepResult::device_at_end).
  DeviceStats d0 = device_->stats();
  memory::MemoryStats m0 = mm_->stats();
  for (long step = start_step_; step < o_.steps; ++step) {
    data_.batch(step, o_.data.batch, seq_, tokens.data(),
                tokens.data() + size_t(o_.data.batch) * seq_);
    const size_t row0 = size_t(rank()) * rank_rows() * seq_, n = size_t(rank_rows()) * seq_;
    std::copy_n(tokens.begin() + row0, n, mine.begin());
    std::copy_n(tokens.begin() + size_t(o_.data.batch) * seq_ + row0, n, mine.begin() + n);
    const auto c0 = Clock::now();
    const int64_t t0 = timeline_.now_ns();
    scheduler::EngineStepResult r;
    std::function<Status()> on_grads;
    if (step == 0 && !o_.outputs.export_grads_path.empty() &&
        (world_rank() == 0 || o_.grid.tp > 1 || piped())) {
      on_grads = [&] { return export_role(Role::kGrad, o_.outputs.export_grads_path); };
    }
    STRATA_RETURN_IF_ERROR(engine_->run_step(step, LearningRateAt(o_.optimizer, o_.steps, step),
                                             mine.data(), &r, on_grads));
    const int64_t t1 = timeline_.now_ns();
    const auto c1 = Clock::now();
    StepStats s = stats_of(step, r, d0, m0);
    s.step_s = std::chrono::duration<double>(c1 - c0).count();
    s.elapsed_s = std::chrono::duration<double>(c1 - start).count();
    s.tokens_per_s = double(o_.data.batch) * seq_ / s.step_s;
    s.overlap = timeline_.overlap(t0, t1);
    d0 = r.device_at_end;
    m0 = r.memory_at_end;
    timeline_.forget(t0);
    on_step(s);
    const bool stop =
        StopRequested(o_.stop_signal) && step + 1 < o_.steps;  // after the last: finish
    if (checkpoints_on() && ((step + 1) % o_.checkpoints.every == 0 || stop)) {
      STRATA_RETURN_IF_ERROR(checkpoints_->checkpoint(step + 1));
    }
    if (stop) return drain();  // Note [Stopping after a step]: no --export, no --trace
  }
  return finish();
}

StepStats PagedTrainer::stats_of(long step, const scheduler::EngineStepResult& r,
                                const DeviceStats& d0, const memory::MemoryStats& m0) const {
  const DeviceStats& d1 = r.device_at_end;
  const memory::MemoryStats& m1 = r.memory_at_end;
  StepStats s;
  s.step = step + 1;
  s.loss = r.loss;
  s.lr = LearningRateAt(o_.optimizer, o_.steps, step);
  s.grad_norm = r.grad_norm;
  s.clipped = r.clipped;
  s.device_peak_bytes = d1.peak_bytes;
  s.paged = true;
  s.moved_bytes.h2d = d1.h2d_bytes - d0.h2d_bytes;
  s.moved_bytes.d2h = d1.d2h_bytes - d0.d2h_bytes;
  s.moved_bytes.nvme_read = m1.nvme_read_bytes - m0.nvme_read_bytes;
  s.moved_bytes.nvme_write = m1.nvme_write_bytes - m0.nvme_write_bytes;
  s.recompute_layers = plan_.recompute_layers;
  s.compute_comm_s = r.compute_comm_s;
  s.activation_bytes = plan_.acts_bytes;
  // The pool's frames in use, layer-major's borrowed boundary frames included.
  s.host_peak_bytes = m1.tiers[static_cast<int>(memory::Tier::kHost)].peak_bytes;
  s.nvme_peak_bytes = m1.tiers[static_cast<int>(memory::Tier::kNvme)].peak_bytes;
  return s;
}

// Every queued update and the pending checkpoint finished (the checkpoint is then durable).
Status PagedTrainer::drain() {
  STRATA_RETURN_IF_ERROR(engine_->drain());
  if (checkpoints_) STRATA_RETURN_IF_ERROR(checkpoints_->wait());
  return Status::Ok();
}

// After the last step: every update and checkpoint finished, then --export and --trace.
Status PagedTrainer::finish() {
  STRATA_RETURN_IF_ERROR(drain());
  // Every rank takes part when some block is sharded or sliced (its pieces are gathered);
  // otherwise every rank holds the same weights and rank 0 alone reads them.
  if (!o_.outputs.export_path.empty() &&
      (world_rank() == 0 || shards_.any_sharded() || o_.grid.tp > 1 || piped())) {
    if (world_rank() == 0) STRATA_RETURN_IF_ERROR(scheduler::PrepareExportDir(o_.outputs));
    // With --delayed-update the master holds the last update (Note [Delayed update]).
    STRATA_RETURN_IF_ERROR(export_role(o_.optimizer.delayed_update ? Role::kMaster : Role::kParam,
                                       o_.outputs.export_path));
    if (world_rank() == 0) STRATA_RETURN_IF_ERROR(scheduler::WriteExportConfig(o_.outputs));
    if (world_rank() == 0) Logger("train")->info("wrote weights to {}", o_.outputs.export_path);
  }
  if (!o_.outputs.trace_path.empty()) {
    STRATA_RETURN_IF_ERROR(timeline_.write_chrome_trace(o_.outputs.trace_path));
    Logger("train")->info("wrote trace to {}", o_.outputs.trace_path);
  }
  return Status::Ok();
}

}  // namespace internal

Result<std::unique_ptr<Trainer>> CreatePagedTrainer(const TrainOptions& options,
                                                    std::unique_ptr<Model> model, int seq,
                                                    TokenDataset data) {
  auto t =
      std::make_unique<internal::PagedTrainer>(options, std::move(model), seq, std::move(data));
  STRATA_RETURN_IF_ERROR(t->setup());
  return std::unique_ptr<Trainer>(std::move(t));
}

}  // namespace strata
