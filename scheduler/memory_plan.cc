#include "scheduler/memory_plan.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/activations.h"
#include "scheduler/boundary_store.h"
#include "scheduler/placement_checks.h"
#include "scheduler/slot_sizes.h"

namespace strata::scheduler {
namespace {
using enum Option;  // the options named here

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

// One micro-batch's activations (Note [Activation layout] in activations.h) with the first
// `recompute_layers` blocks checkpointed.
uint64_t ActivationBytes(const MemoryPlanInput& in, int recompute_layers) {
  return RoundUp(MakeActivationLayout(*in.model, in.micro_rows, in.seq, recompute_layers,
                                      in.micro_batches(), in.stage)
                     .bytes());
}

// The step's inputs and targets.
uint64_t TokenBytes(const MemoryPlanInput& in) {
  return RoundUp(uint64_t(2) * in.batch * in.seq * 4);
}

// The model's read-only constants for this seq (Model::constants: LLaMA's rotary table).
uint64_t ConstantBytes(const MemoryPlanInput& in) {
  return RoundUp(uint64_t(in.model->constants(in.seq).size()) * sizeof(float));
}

// Device bytes besides the slots: activations, tokens, the model's constants, (dp) the
// embedding's gradient part, (split blocks) the slice buffers and (tp) the head's statistics.
uint64_t FixedDeviceBytes(const MemoryPlanInput& in, int recompute_layers) {
  return ActivationBytes(in, recompute_layers) + TokenBytes(in) + ConstantBytes(in) +
         RoundUp(in.embedding_part_bytes) + RoundUp(in.slice_bytes);
}

const ModelLayout& ParamLayout(const MemoryPlanInput& in) {
  return in.param_layout != nullptr ? *in.param_layout : *in.layout;
}

// Every block's parameters and the gradients beside them, plus one prefetch slot and a second
// gradient slot (a block's backward then need not wait for the previous block's gradient to
// finish its copy down): more slots than that are never used.
std::vector<uint64_t> UsefulSlotSizes(const MemoryPlanInput& in, const std::vector<uint64_t>& min) {
  std::vector<uint64_t> useful =
      CoverBoth(min, AllResidentSlotSizes(ParamLayout(in), *in.layout, in.tied_head));
  const BlockSlotBytes params = SlotBytesOf(ParamLayout(in)), grads = SlotBytesOf(*in.layout);
  useful.push_back(params.transformer > 0 ? params.transformer : params.largest);
  useful.push_back(grads.transformer > 0 ? grads.transformer : grads.largest);
  return useful;
}

// The blocks --recompute checkpoints under plan.device_bytes: auto takes the fewest whose
// working set fits, all of them when none does (the refusal then gives the smallest need).
int RecomputeLayers(const MemoryPlanInput& in, uint64_t device_bytes, uint64_t min_slot_bytes) {
  const int layers = in.stage_layers();
  if (in.recompute != "auto") return in.recompute == "all" ? layers : 0;
  int k = 0;
  while (k < layers && FixedDeviceBytes(in, k) + min_slot_bytes > device_bytes) ++k;
  return k;
}

Status BelowMinimalWorkingSet(const MemoryPlanInput& in, const MemoryPlan& plan,
                              const std::vector<uint64_t>& min_slots) {
  std::string msg =
      Mention(kGpuMem) + " " + FormatBytes(plan.device_bytes) + " is below the " +
      FormatBytes(plan.min_device_bytes) + " (" + std::to_string(plan.min_device_bytes) +
      " bytes) that the minimal device working set needs: block slots of " +
      DescribeSlots(min_slots) +
      " (what the head's backward and a block's backward hold at once + 1 prefetch), " +
      FormatBytes(plan.acts_bytes) + " of activations for " + Mention(kMicroBatch) + " " +
      std::to_string(in.micro_rows) + " " + Mention(kSeq) + " " + std::to_string(in.seq) + " and " +
      FormatBytes(plan.tokens_bytes) + " of tokens; raise " + Mention(kGpuMem) + " or lower " +
      Mention(kMicroBatch) + "/" + Mention(kSeq);
  if (plan.recompute_layers < plan.layers) msg += ", or use " + Mention(kRecompute) + " auto";
  return ShortOfBytes(kGpuMem, Status::ResourceExhausted(msg), plan.device_bytes,
                      plan.min_device_bytes);
}

// The minimal slot list, then the useful list's further slots (largest first) while they fit
// beside the activations and tokens; sorted largest first.
std::vector<uint64_t> ChooseSlots(const std::vector<uint64_t>& min_slots,
                                  std::vector<uint64_t> extra, uint64_t slot_room) {
  std::vector<uint64_t> slots = min_slots;
  uint64_t used = TotalBytes(min_slots);
  for (uint64_t s : min_slots) {  // what the minimal list already covers
    auto it = std::find_if(extra.begin(), extra.end(), [&](uint64_t e) { return e <= s; });
    if (it != extra.end()) extra.erase(it);
  }
  for (uint64_t s : extra) {
    if (used + s > slot_room) continue;
    slots.push_back(s);
    used += s;
  }
  std::sort(slots.begin(), slots.end(), std::greater<>());
  return slots;
}

// The device side of the plan: recompute, activations, the minimal working set (refused below
// it), the slots, and whether the parameters stay on the device (`params_on` auto -> device).
Status PlanDevice(const MemoryPlanInput& in, MemoryPlan* plan, std::string* params_on) {
  const ModelLayout& layout = *in.layout;
  plan->layers = in.stage_layers();
  plan->stage = in.stage;
  plan->slot_bytes = SlotBytesOf(layout).largest;
  plan->tokens_bytes = TokenBytes(in);
  plan->constants_bytes = ConstantBytes(in);
  plan->embedding_part_bytes = RoundUp(in.embedding_part_bytes);
  plan->slice_bytes = RoundUp(in.slice_bytes);
  const std::vector<uint64_t> min_slots = MinimalSlotSizes(ParamLayout(in), layout, in.tied_head);
  const uint64_t min_slot_bytes = TotalBytes(min_slots);
  const std::vector<uint64_t> useful = UsefulSlotSizes(in, min_slots);
  plan->device_bytes = in.gpu_mem > 0 ? in.gpu_mem : FixedDeviceBytes(in, 0) + TotalBytes(useful);
  plan->recompute_layers = RecomputeLayers(in, plan->device_bytes, min_slot_bytes);
  plan->acts_bytes = ActivationBytes(in, plan->recompute_layers);
  const uint64_t fixed = plan->acts_bytes + plan->tokens_bytes + plan->constants_bytes +
                         plan->embedding_part_bytes + plan->slice_bytes;
  plan->min_device_bytes = fixed + min_slot_bytes;
  if (plan->device_bytes < plan->min_device_bytes) {
    return BelowMinimalWorkingSet(in, *plan, min_slots);
  }
  plan->slot_sizes = ChooseSlots(min_slots, useful, plan->device_bytes - fixed);
  plan->slots = static_cast<int>(plan->slot_sizes.size());
  const std::vector<uint64_t> resident =
      CoverBoth(min_slots, AllResidentSlotSizes(ParamLayout(in), layout, in.tied_head));
  const bool all_resident = CoverBoth(plan->slot_sizes, resident) == plan->slot_sizes;
  // auto fills the fastest tier first: parameters stay on the device when every block fits.
  if (*params_on == "auto" && all_resident) *params_on = "device";
  if (*params_on == "device" && !all_resident) {
    return ShortOfBytes(
        kParamsOn,
        Status::ResourceExhausted(
            Mention(kParamsOn) + " device needs block slots of " + DescribeSlots(resident) +
            " (every block's parameters and the gradients beside them): " +
            FormatBytes(fixed + TotalBytes(resident)) + " of " + Mention(kGpuMem) + ", which is " +
            FormatBytes(plan->device_bytes) + "; raise " + Mention(kGpuMem) + " or use " +
            Mention(kParamsOn) + " host"),
        plan->device_bytes, fixed + TotalBytes(resident));
  }
  return Status::Ok();
}

// Where one role's `pages` live, given the placement `choice` and the host frames still free
// beside the working pages (`avail`, reduced by what is pinned here).
Status PlaceRole(const MemoryPlanInput& in, const std::string& choice, uint64_t pages,
                 Option option, uint64_t* avail, MemoryPlan* plan, Home* out) {
  if (!in.has_nvme) {  // everything fits (checked by PlanHost)
    *out = choice == "device" ? Home::kDevice : Home::kHost;
    return Status::Ok();
  }
  if (choice == "nvme") {
    *out = Home::kNvme;
    return Status::Ok();
  }
  if (choice == "auto") {
    *out = pages <= *avail ? Home::kHost : Home::kNvme;
  } else if (choice == "host") {
    if (pages > *avail) {
      return ShortOfBytes(
          option,
          Status::ResourceExhausted(
              Mention(option) + " host pins " + std::to_string(pages) + " pages (" +
              FormatBytes(pages * in.page_bytes) + ") in the host pool, which has room for " +
              std::to_string(*avail) + " beside its " + std::to_string(kHostWorkingPages) +
              " working pages (" + Mention(kHostMem) + " " + FormatBytes(plan->host_bytes) +
              "); raise " + Mention(kHostMem) + " or use " + Mention(option) + " nvme"),
          *avail * in.page_bytes, pages * in.page_bytes);
    }
    *out = Home::kHost;
  } else {
    // params on device: the host pages are the master copy AdamW updates, pinned in the pool
    // when they fit beside the working pages (else they pass through it like nvme's).
    *out = Home::kDevice;
    plan->params_host_pinned = pages <= *avail;
    if (plan->params_host_pinned) *avail -= pages;
    return Status::Ok();
  }
  if (*out == Home::kHost) *avail -= pages;
  return Status::Ok();
}

// The host side of the plan: the pool's size (refused when it cannot work) and the homes of the
// parameters and of the optimizer's state.
Status PlanHost(const MemoryPlanInput& in, const std::string& params_on,
                const std::string& optimizer_on, MemoryPlan* plan) {
  const uint64_t page = in.page_bytes;
  const uint64_t total_pages = in.param_pages + in.grad_pages + in.moment_pages;
  const uint64_t host_frames = in.host_mem > 0 ? in.host_mem / page : total_pages;
  plan->host_bytes = host_frames * page;
  if (!in.has_nvme && host_frames < total_pages) {
    return ShortOfBytes(
        kHostMem,
        Status::ResourceExhausted(Mention(kHostMem) + " " + FormatBytes(in.host_mem) + " holds " +
                                  std::to_string(host_frames) + " pages of " + FormatBytes(page) +
                                  ", but without " + Mention(kNvmeDir) + " all " +
                                  std::to_string(total_pages) + " pages of model state (" +
                                  FormatBytes(total_pages * page) + ") must fit in it; raise " +
                                  Mention(kHostMem) + " or give " + Mention(kNvmeDir)),
        in.host_mem, total_pages * page);
  }
  uint64_t avail = host_frames >= kHostWorkingPages ? host_frames - kHostWorkingPages : 0;
  if (in.has_nvme && host_frames < kHostWorkingPages) {
    return ShortOfBytes(kHostMem,
                        Status::ResourceExhausted(
                            Mention(kHostMem) + " " + FormatBytes(in.host_mem) + " is below the " +
                            FormatBytes(kHostWorkingPages * page) + " (" +
                            std::to_string(kHostWorkingPages) + " pages of " + FormatBytes(page) +
                            ") that the optimizer and the transfers need at once; raise " +
                            Mention(kHostMem) + " or lower " + Mention(kPageSize)),
                        in.host_mem, kHostWorkingPages * page);
  }
  STRATA_RETURN_IF_ERROR(
      PlaceRole(in, params_on, in.param_pages, kParamsOn, &avail, plan, &plan->params));
  return PlaceRole(in, optimizer_on, in.moment_pages, kOptimizerOn, &avail, plan, &plan->optimizer);
}

// Layer-major's boundary store: every micro-batch's block-boundary activations (the embedding's
// output and each block's output) in frames of the host pool (Note [Boundaries in borrowed
// frames] in boundary_store.h).
uint64_t BoundaryStoreBytes(const MemoryPlanInput& in) {
  const uint64_t boundary =
      BoundaryStore::BoundaryBytes(in.model->shape().n_embd, in.micro_rows, in.seq);
  return BoundaryStore::Frames(in.micro_batches(), in.model->shape().n_layer, boundary,
                               in.page_bytes) *
         in.page_bytes;
}

// Link bytes per step of each order (Note [Micro-batch order]): parameter loads (none when they
// stay on the device), gradients down (and up again between micro-batches), boundary copies.
void PredictLinkBytes(const MemoryPlanInput& in, MemoryPlan* plan) {
  const uint64_t M = in.micro_batches(), P = uint64_t(in.layout->total_numel) * 4;
  const uint64_t loads = plan->params == Home::kDevice ? 0 : 2 * P;
  const uint64_t mbm = M * loads + M * P + (M - 1) * P;
  const uint64_t lm = loads + P + 3 * BoundaryStoreBytes(in);
  plan->predicted_link_bytes[int(MicroBatchOrder::kMicroBatchMajor)] = mbm;
  plan->predicted_link_bytes[int(MicroBatchOrder::kLayerMajor)] = lm;
}

// The layer-major plan: every block recomputed on the device, the host pool beside the boundary
// store. `params_choice` is the --params-on value before any plan resolved it.
Status PlanLayerMajor(const MemoryPlanInput& in, std::string params_choice,
                      const std::string& optimizer_on, MemoryPlan* lm) {
  const uint64_t store = BoundaryStoreBytes(in);
  if (in.host_mem > 0 && in.host_mem <= store) {
    return ShortOfBytes(
        kHostMem,
        Status::ResourceExhausted(Mention(kHostMem) + " " + FormatBytes(in.host_mem) +
                                  " does not hold them; raise " + Mention(kHostMem)),
        in.host_mem, store);
  }
  // The host side is planned as if the boundaries' frames were gone (their peak), then the pool
  // gets them back: they are borrowed from it.
  MemoryPlanInput lm_in = in;
  lm_in.recompute = "all";
  if (in.host_mem > 0) lm_in.host_mem = in.host_mem - store;
  STRATA_RETURN_IF_ERROR(PlanDevice(lm_in, lm, &params_choice));
  STRATA_RETURN_IF_ERROR(PlanHost(lm_in, params_choice, optimizer_on, lm));
  lm->host_bytes += store;
  lm->order = MicroBatchOrder::kLayerMajor;
  lm->boundary_store_bytes = store;
  return Status::Ok();
}

// Whether the run goes layer-major (MemoryPlan's comment). `plan` is the micro-batch-major plan.
Status ChooseOrder(const MemoryPlanInput& in, const std::string& params_choice,
                   const std::string& optimizer_on, MemoryPlan* plan) {
  const bool forced = in.micro_batch_order == "layer-major";
  const std::string set_by = in.order_set_by.empty()
                                 ? Mention(kMicroBatchOrder) + " " + in.micro_batch_order
                                 : in.order_set_by;
  plan->order_reason = in.micro_batches() == 1                       ? "one micro-batch"
                       : in.micro_batch_order == "micro-batch-major" ? set_by
                                                                     : "it moves fewer bytes";
  if (in.micro_batches() == 1) return Status::Ok();
  PredictLinkBytes(in, plan);
  if (in.micro_batch_order == "micro-batch-major") return Status::Ok();
  // Layer-major recomputes the blocks whose activations micro-batch-major keeps: worth it when
  // the share of link bytes it saves exceeds the share of blocks it newly recomputes.
  const uint64_t* predicted = plan->predicted_link_bytes;
  const double saved = predicted[0] > predicted[1] ? 1.0 - double(predicted[1]) / predicted[0] : 0;
  const int kept = plan->layers - plan->recompute_layers;
  if (!forced && saved <= double(kept) / std::max(plan->layers, 1)) {
    if (saved > 0) {
      plan->order_reason = "the activations of " + std::to_string(kept) + " of " +
                           std::to_string(plan->layers) +
                           " blocks fit on the device; layer-major would recompute them to save "
                           "a smaller share of the traffic";
    }
    return Status::Ok();
  }
  MemoryPlan lm;
  const Status fits = PlanLayerMajor(in, params_choice, optimizer_on, &lm);
  const std::string store = FormatBytes(BoundaryStoreBytes(in)) + " of boundary activations";
  if (!fits.ok() && forced) {
    return fits.with_context(Mention(kMicroBatchOrder) + " layer-major keeps " + store + " in " +
                             Mention(kHostMem));
  }
  if (!fits.ok()) {
    plan->order_reason = "layer-major's plan does not fit beside its " + store + ": " +
                         fits.message();
    return Status::Ok();
  }
  if (forced) {
    PredictLinkBytes(in, &lm);  // no micro-batch-major plan was made
  } else {
    std::copy(predicted, predicted + 2, lm.predicted_link_bytes);
  }
  lm.order_reason = forced ? set_by : plan->order_reason;
  if (!forced && kept > 0) {
    lm.order_reason += "; it also recomputes the " + std::to_string(kept) +
                       (kept == 1 ? " block whose activations fit" : " blocks whose activations fit");
  }
  *plan = lm;
  return Status::Ok();
}

}  // namespace

std::string MemoryPlan::to_string() const {
  return std::string("params on ") + memory::TierName(params) + ", optimizer on " +
         memory::TierName(optimizer) + ", recompute " + std::to_string(recompute_layers) + " of " +
         std::to_string(layers) + " blocks, device slots " + DescribeSlots(slot_sizes) +
         ", activations " + FormatBytes(acts_bytes) + ", device " + FormatBytes(device_bytes) +
         " (minimum " + FormatBytes(min_device_bytes) + "), host " + FormatBytes(host_bytes);
}

std::string MemoryPlan::order_to_string() const {
  std::string s = std::string("micro-batch order: ") + MicroBatchOrderName(order) + " (" +
                  order_reason;
  if (predicted_link_bytes[0] > 0) {
    s += "; predicted link bytes per step: micro-batch-major " +
         FormatBytes(predicted_link_bytes[0]) + ", layer-major " +
         FormatBytes(predicted_link_bytes[1]);
  }
  if (boundary_store_bytes > 0) {
    s += "; up to " + FormatBytes(boundary_store_bytes) +
         " of boundary activations in frames of the host pool";
  }
  return s + ")";
}

Result<MemoryPlan> MakeMemoryPlan(const MemoryPlanInput& in) {
  std::string params_on, optimizer_on;
  const PlacementChoice choice{in.params_on,         in.optimizer_on,    in.recompute,
                               in.micro_batch_order, in.micro_batches(), in.has_nvme};
  STRATA_RETURN_IF_ERROR(CheckPlacement(choice, &params_on, &optimizer_on));
  const std::string params_choice = params_on;
  MemoryPlan plan;
  const bool forced_layer_major = in.micro_batch_order == "layer-major" && in.micro_batches() > 1;
  if (!forced_layer_major) {  // the micro-batch-major plan, which auto compares
    STRATA_RETURN_IF_ERROR(PlanDevice(in, &plan, &params_on));
    STRATA_RETURN_IF_ERROR(PlanHost(in, params_on, optimizer_on, &plan));
  } else {
    plan.layers = in.model->shape().n_layer;
  }
  STRATA_RETURN_IF_ERROR(ChooseOrder(in, params_choice, optimizer_on, &plan));
  return plan;
}

Result<uint64_t> MinimalDeviceBytes(const MemoryPlanInput& in) {
  STRATA_RETURN_IF_ERROR(CheckRecompute(in.recompute));
  const int recompute_layers = in.recompute == "none" ? 0 : in.stage_layers();
  return FixedDeviceBytes(in, recompute_layers) +
         TotalBytes(MinimalSlotSizes(ParamLayout(in), *in.layout, in.tied_head));
}

}  // namespace strata::scheduler
