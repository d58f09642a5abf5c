// MemoryPlan: where each kind of model state lives and how the device budget is cut, decided once
// before step 1 from the model, the page plan and the user's budgets and placement flags.
//
// Note [Block slots]
// Device: kernels need contiguous tensors and a page boundary may cut a tensor, so the device side
// works in *slots*: contiguous device buffers, each holding one block's parameters or its gradient
// in the block's own layout (core/nn/model_layout.h), of a few size classes
// (scheduler/slot_sizes.h): a slot holds any block no larger than itself. Slots, the activations
// and the step's tokens are allocated once from the Device arena; nothing else is, so the arena's
// peak is exactly their sum and cannot exceed --gpu-mem. The minimal working set is what the step
// holds at once — head backward: the head's and the embedding's parameters and gradients (the head
// is tied to wte); a block's backward: its parameters, its gradient and the embedding's gradient —
// plus one block-sized prefetch slot, plus activations. Budget beyond it buys more block-sized
// slots (fewer reloads).
//
// Host: the MemoryManager's pinned pool of --host-mem. Without NVMe every page must fit in it.
// With NVMe, pages whose home is the host are pinned there for the whole run; the rest pass
// through the pool (cached Belady/LRU by the MemoryManager). The optimizer holds four pages
// (param, grad, adam_m, adam_v of one page index) and the engine one more in flight, so the pool
// needs kHostWorkingPages beyond the pinned ones.
//
// Recompute (--recompute): none keeps every activation; all checkpoints every block; auto
// checkpoints the fewest blocks whose savings make the minimal working set fit --gpu-mem (the
// first k blocks: which ones does not change the arithmetic, and each costs one more forward).
//
// Micro-batch order (--micro-batch-order; Note [Micro-batch order] in step_program.h):
// layer-major recomputes every block and keeps the block-boundary activations of every
// micro-batch in frames borrowed from the host pool (boundary_store_bytes at their peak; the
// pool must work beside them); micro-batch-major keeps one micro-batch's. auto takes layer-major
// when there is more than one micro-batch, the host pool still works beside the boundaries, and the
// share of link bytes per step it is predicted to save (predicted_link_bytes) exceeds the share of
// blocks it recomputes beyond micro-batch-major's plan (so when activations, not states, are what
// does not fit, micro-batch-major stays).
//
// Placement (--params-on, --optimizer-on): device | host | nvme | auto.
//   params device: every block's parameters stay in a slot (the host pages stay the master copy
//     that AdamW updates, pinned in the pool when they fit; a block's slot is refreshed after
//     its update);
//   host: pinned in the host pool; nvme: live on NVMe and pass through the pool;
//   auto fills the faster tier first with what is used most often: parameters (read forward and
//     backward and written by the optimizer) before the AdamW moments (used by the optimizer only):
//     parameters on the device when every block's slot fits --gpu-mem, else on the host; on the
//     host when they fit beside the working pages, else NVMe.
//   --optimizer-on device (AdamW on the device) is not implemented: NotSupported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/model.h"
#include "core/nn/model_layout.h"
#include "core/util/status.h"
#include "memory/tier.h"
#include "scheduler/activations.h"
#include "scheduler/step_program.h"

namespace strata::scheduler {

// Where a role's pages live: the tiers of memory/ (one enum, memory/tier.h).
using Home = memory::Tier;

inline constexpr int kMinWorkingSlots = 4;  // a tied head's backward: P_head, P_emb, G_head, G_emb
inline constexpr int kPrefetchSlots = 1;
inline constexpr uint64_t kHostWorkingPages = 6;

struct MemoryPlanInput {
  const Model* model = nullptr;  // what the activations, boundaries and constants are sized by
  const ModelLayout* layout = nullptr;  // the blocks as the device slots see them
  int micro_rows = 1;  // rows per micro-batch
  int batch = 1;       // rows per step (tokens buffer)
  int seq = 1;
  uint64_t gpu_mem = 0;   // 0: enough for everything resident
  uint64_t host_mem = 0;  // 0: enough for every page
  bool has_nvme = false;
  uint64_t page_bytes = 0;
  uint64_t param_pages = 0, grad_pages = 0, moment_pages = 0;  // moment = adam_m + adam_v
  std::string params_on = "auto", optimizer_on = "auto", recompute = "none";
  std::string micro_batch_order = "auto";  // auto | layer-major | micro-batch-major
  // Who set micro_batch_order when not --micro-batch-order (the pipeline, sharding), in words
  // for the order's reason; "" when the flag did.
  std::string order_set_by;
  // Data parallelism: device bytes of the embedding's own gradient part (Note [Data-parallel
  // gradients] in data_parallel.h); 0 on one rank.
  uint64_t embedding_part_bytes = 0;
  // Split blocks (Note [Split operators] in split_plan.h): the layout as parameter slots see it
  // (nullptr: `layout`) and the device bytes of the two slice buffers.
  const ModelLayout* param_layout = nullptr;
  uint64_t slice_bytes = 0;
  // Pipeline parallelism: the stage's layers and in-flight micro-batches (Note [Stage
  // activations] in activations.h); --recompute decides over the stage's own layers.
  ActivationStage stage;
  // The step program's head form (StepProgram::tied_head): an untied head's ops hold no slot of
  // the embedding, so the minimal working set is smaller. A pipeline's stage programs are tied.
  bool tied_head = true;
  int stage_layers() const {
    return stage.layers >= 0 ? stage.layers : model->shape().n_layer - stage.first_layer;
  }
  int micro_batches() const { return batch / micro_rows; }
};

struct MemoryPlan {
  Home params = Home::kHost;
  bool params_host_pinned = false;  // params kDevice: their host master pages are pinned too
  Home optimizer = Home::kHost;
  // Activation checkpointing: the first recompute_layers transformer blocks keep only their
  // output and rebuild their activations in backward; the others keep all of theirs.
  int recompute_layers = 0;
  int layers = 0;  // transformer blocks of the model
  bool recompute() const { return recompute_layers > 0; }
  uint64_t slot_bytes = 0;           // the largest block (rounded to 4 KiB)
  std::vector<uint64_t> slot_sizes;  // bytes of each slot, largest first (scheduler/slot_sizes.h)
  int slots = 0;                     // slot_sizes.size()
  uint64_t acts_bytes = 0;           // ActivationLayout::bytes() (activations.h), rounded to 4 KiB
  uint64_t tokens_bytes = 0;         // the step's inputs and targets (rounded to 4 KiB)
  uint64_t constants_bytes = 0;      // the model's constants (Model::constants), rounded to 4 KiB
  uint64_t embedding_part_bytes = 0;  // dp: MemoryPlanInput's, rounded to 4 KiB
  uint64_t slice_bytes = 0;           // split blocks: MemoryPlanInput's, rounded to 4 KiB
  ActivationStage stage;             // MemoryPlanInput's
  uint64_t device_bytes = 0;         // the --gpu-mem budget in force
  uint64_t min_device_bytes = 0;  // the minimal working set (what a smaller budget is refused with)
  uint64_t host_bytes = 0;        // the --host-mem budget in force (whole pages)
  MicroBatchOrder order = MicroBatchOrder::kMicroBatchMajor;
  uint64_t boundary_store_bytes = 0;  // layer-major: pool frames its boundaries take at most
  // The link bytes per step each order is predicted to move (both 0 with one micro-batch).
  uint64_t predicted_link_bytes[2] = {0, 0};  // indexed by MicroBatchOrder
  std::string order_reason;                   // why this order (order_to_string)
  std::string to_string() const;
  std::string order_to_string() const;  // the order and why, for the first line of a run
};

// Errors: InvalidArgument (unknown placement/recompute/order value, nvme without --nvme-dir,
// layer-major with --recompute none),
// ResourceExhausted (a budget below what the plan needs: the message gives the number and the
// flag), NotSupported (--optimizer-on device).
Result<MemoryPlan> MakeMemoryPlan(const MemoryPlanInput& in);

// The minimal device working set: the smallest --gpu-mem (in.gpu_mem) that MakeMemoryPlan
// accepts for `in`, i.e. the minimal block slots, one micro-batch's activations with as many
// blocks checkpointed as in.recompute allows (none: 0; all, auto: every block) and the step's
// tokens. Reads only the layout, micro_rows, batch, seq and recompute; the number
// MakeMemoryPlan's refusal of a smaller budget states. InvalidArgument for an unknown
// in.recompute.
Result<uint64_t> MinimalDeviceBytes(const MemoryPlanInput& in);

}  // namespace strata::scheduler
