#include "scheduler/memory_plan.h"

#include <algorithm>

#include "core/device/device.h"
#include "core/nn/gpt_blocks.h"
#include "core/util/check.h"
#include "core/util/sizes.h"

namespace strata::scheduler {
namespace {

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

Result<std::string> CheckChoice(const std::string& value, const std::string& flag) {
  if (value == "device" || value == "host" || value == "nvme" || value == "auto") return value;
  return Status::InvalidArgument(flag + " must be device, host, nvme or auto, got '" + value + "'");
}

}  // namespace

const char* HomeName(Home home) {
  switch (home) {
    case Home::kDevice:
      return "device";
    case Home::kHost:
      return "host";
    case Home::kNvme:
      return "nvme";
  }
  return "?";
}

std::string MemoryPlan::ToString() const {
  return std::string("params on ") + HomeName(params) + ", optimizer on " + HomeName(optimizer) +
         ", recompute " + std::to_string(recompute_layers) + " of " + std::to_string(layers) + " blocks, " + std::to_string(slots) +
         " device slots of " + FormatBytes(slot_bytes) + ", activations " +
         FormatBytes(acts_bytes) + ", device " + FormatBytes(device_bytes) + " (minimum " +
         FormatBytes(min_device_bytes) + "), host " + FormatBytes(host_bytes);
}

int64_t ActivationFloats(const GptConfig& c, int micro_rows, int seq, int recompute_layers) {
  STRATA_CHECK(recompute_layers >= 0 && recompute_layers <= c.n_layer);
  const int64_t BT = int64_t(micro_rows) * seq;
  // Each top-level piece is carved at a multiple of kTensorAlignFloats.
  const int64_t residual =
      (BT * c.n_embd + kTensorAlignFloats - 1) / kTensorAlignFloats * kTensorAlignFloats;
  const int64_t block_acts = TransformerActsFloats(c, micro_rows, seq);
  const int64_t kept = residual /*embedding output*/ + recompute_layers * residual +
                       (c.n_layer - recompute_layers) * block_acts +
                       (recompute_layers > 0 ? block_acts : 0) /*rebuilt in backward*/;
  return kept + HeadActsFloats(c, micro_rows, seq) + BackwardScratchFloats(c, micro_rows, seq) +
         residual /*dres*/;
}

Result<MemoryPlan> MakeMemoryPlan(const MemoryPlanInput& in) {
  const GptLayout& layout = *in.layout;
  const GptConfig& c = layout.config;
  STRATA_ASSIGN_OR_RETURN(std::string params_on, CheckChoice(in.params_on, "--params-on"));
  STRATA_ASSIGN_OR_RETURN(std::string optimizer_on, CheckChoice(in.optimizer_on, "--optimizer-on"));
  if (in.recompute != "none" && in.recompute != "all" && in.recompute != "auto") {
    return Status::InvalidArgument("--recompute must be none, all or auto, got '" + in.recompute +
                                   "'");
  }
  if (optimizer_on == "device") {
    return Status::NotSupported(
        "--optimizer-on device (AdamW on the device) is not implemented yet; use host or nvme "
        "(AdamW then runs on the host over TBB)");
  }
  for (const auto& [value, flag] :
       {std::pair{params_on, "--params-on"}, std::pair{optimizer_on, "--optimizer-on"}}) {
    if (value == "nvme" && !in.has_nvme) {
      return Status::InvalidArgument(std::string(flag) + " nvme needs --nvme-dir");
    }
  }

  MemoryPlan plan;
  plan.layers = c.n_layer;
  int64_t largest = 0;
  for (const BlockSpec& b : layout.blocks) largest = std::max(largest, b.numel);
  plan.slot_bytes = RoundUp(uint64_t(largest) * 4);
  plan.tokens_bytes = RoundUp(uint64_t(2) * in.batch * in.seq * 4);
  const int min_slots = kMinWorkingSlots + kPrefetchSlots;
  const int all_resident_slots = layout.num_blocks() + 2;  // every block's params + 2 grads
  const int useful_slots = layout.num_blocks() + 3;
  auto acts = [&](int recompute_layers) {
    return RoundUp(ActivationFloats(c, in.micro_rows, in.seq, recompute_layers) * 4);
  };
  auto fixed = [&](int recompute_layers) { return acts(recompute_layers) + plan.tokens_bytes; };

  plan.device_bytes = in.gpu_mem > 0 ? in.gpu_mem : fixed(0) + useful_slots * plan.slot_bytes;
  if (in.recompute == "auto") {
    // The fewest checkpointed blocks whose working set fits; all of them when none does (the
    // error below then gives the smallest possible need).
    plan.recompute_layers = 0;
    while (plan.recompute_layers < c.n_layer &&
           fixed(plan.recompute_layers) + min_slots * plan.slot_bytes > plan.device_bytes) {
      ++plan.recompute_layers;
    }
  } else {
    plan.recompute_layers = in.recompute == "all" ? c.n_layer : 0;
  }
  plan.acts_bytes = acts(plan.recompute_layers);
  plan.min_device_bytes = fixed(plan.recompute_layers) + min_slots * plan.slot_bytes;
  if (plan.device_bytes < plan.min_device_bytes) {
    std::string msg =
        "--gpu-mem " + FormatBytes(plan.device_bytes) + " is below the " +
        FormatBytes(plan.min_device_bytes) + " (" + std::to_string(plan.min_device_bytes) +
        " bytes) that the minimal device "
        "working set needs: " +
        std::to_string(min_slots) + " block slots of " + FormatBytes(plan.slot_bytes) +
        " (4 for the tied head's backward + 1 "
        "prefetch), " +
        FormatBytes(plan.acts_bytes) +
        " of activations for "
        "--micro-batch " +
        std::to_string(in.micro_rows) + " --seq " + std::to_string(in.seq) + " and " +
        FormatBytes(plan.tokens_bytes) + " of tokens; raise --gpu-mem or lower --micro-batch/--seq";
    if (plan.recompute_layers < c.n_layer) msg += ", or use --recompute auto";
    return Status::ResourceExhausted(msg);
  }
  plan.slots = static_cast<int>(std::min<uint64_t>(
      useful_slots, (plan.device_bytes - fixed(plan.recompute_layers)) / plan.slot_bytes));
  if (params_on == "device" && plan.slots < all_resident_slots) {
    return Status::ResourceExhausted(
        "--params-on device needs " + std::to_string(all_resident_slots) + " slots of " +
        FormatBytes(plan.slot_bytes) + " (every block's parameters and two gradients): " +
        FormatBytes(fixed(plan.recompute_layers) + all_resident_slots * plan.slot_bytes) +
        " of --gpu-mem, which is " + FormatBytes(plan.device_bytes) +
        "; raise --gpu-mem or use --params-on host");
  }

  // Host.
  const uint64_t page = in.page_bytes;
  const uint64_t total_pages = in.param_pages + in.grad_pages + in.moment_pages;
  const uint64_t host_frames = in.host_mem > 0 ? in.host_mem / page : total_pages;
  plan.host_bytes = host_frames * page;
  if (!in.has_nvme && host_frames < total_pages) {
    return Status::ResourceExhausted(
        "--host-mem " + FormatBytes(in.host_mem) + " holds " + std::to_string(host_frames) +
        " pages of " + FormatBytes(page) + ", but without --nvme-dir all " +
        std::to_string(total_pages) + " pages of model state (" + FormatBytes(total_pages * page) +
        ") must fit in it; raise --host-mem or give --nvme-dir");
  }
  uint64_t avail = host_frames >= kHostWorkingPages ? host_frames - kHostWorkingPages : 0;
  if (in.has_nvme && host_frames < kHostWorkingPages) {
    return Status::ResourceExhausted("--host-mem " + FormatBytes(in.host_mem) + " is below the " +
                                     FormatBytes(kHostWorkingPages * page) + " (" +
                                     std::to_string(kHostWorkingPages) + " pages of " +
                                     FormatBytes(page) +
                                     ") that the optimizer and the transfers need at "
                                     "once; raise --host-mem or lower --page-size");
  }
  auto place = [&](const std::string& choice, uint64_t pages, const char* flag,
                   Home* out) -> Status {
    if (!in.has_nvme) {  // everything fits (checked above)
      *out = choice == "device" ? Home::kDevice : Home::kHost;
      return Status::Ok();
    }
    if (choice == "nvme") {
      *out = Home::kNvme;
      return Status::Ok();
    }
    if (choice == "auto") {
      *out = pages <= avail ? Home::kHost : Home::kNvme;
    } else if (choice == "host") {
      if (pages > avail) {
        return Status::ResourceExhausted(
            std::string(flag) + " host pins " + std::to_string(pages) + " pages (" +
            FormatBytes(pages * page) + ") in the host pool, which has room for " +
            std::to_string(avail) + " beside its " + std::to_string(kHostWorkingPages) +
            " working pages (--host-mem " + FormatBytes(plan.host_bytes) +
            "); raise --host-mem or use " + flag + " nvme");
      }
      *out = Home::kHost;
    } else {
      *out = Home::kDevice;  // params on device: the host pages are the master copy
      return Status::Ok();
    }
    if (*out == Home::kHost) avail -= pages;
    return Status::Ok();
  };
  STRATA_RETURN_IF_ERROR(place(params_on, in.param_pages, "--params-on", &plan.params));
  STRATA_RETURN_IF_ERROR(place(optimizer_on, in.moment_pages, "--optimizer-on", &plan.optimizer));
  return plan;
}

}  // namespace strata::scheduler
