#include "scheduler/memory_plan.h"

#include <algorithm>

#include "core/device/device.h"
#include "core/nn/gpt_blocks.h"
#include "core/util/check.h"
#include "core/util/sizes.h"
#include "scheduler/slot_sizes.h"

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
         ", recompute " + std::to_string(recompute_layers) + " of " + std::to_string(layers) + " blocks, device slots " +
         DescribeSlots(slot_sizes) + ", activations " +
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
  const BlockSlotBytes block_bytes = SlotBytesOf(layout);
  plan.slot_bytes = block_bytes.largest;
  plan.tokens_bytes = RoundUp(uint64_t(2) * in.batch * in.seq * 4);
  const std::vector<uint64_t> min_slots = MinimalSlotSizes(layout);
  const uint64_t min_slot_bytes = TotalBytes(min_slots);
  // Every block's parameters and the gradients beside them, plus one prefetch slot and a second
  // gradient slot (a block's backward then need not wait for the previous block's gradient to
  // finish its copy down): more slots than that are never used.
  std::vector<uint64_t> useful = CoverBoth(min_slots, AllResidentSlotSizes(layout));
  const uint64_t spare = block_bytes.transformer > 0 ? block_bytes.transformer : block_bytes.largest;
  useful.push_back(spare);
  useful.push_back(spare);
  auto acts = [&](int recompute_layers) {
    return RoundUp(ActivationFloats(c, in.micro_rows, in.seq, recompute_layers) * 4);
  };
  auto fixed = [&](int recompute_layers) { return acts(recompute_layers) + plan.tokens_bytes; };

  plan.device_bytes = in.gpu_mem > 0 ? in.gpu_mem : fixed(0) + TotalBytes(useful);
  if (in.recompute == "auto") {
    // The fewest checkpointed blocks whose working set fits; all of them when none does (the
    // error below then gives the smallest possible need).
    plan.recompute_layers = 0;
    while (plan.recompute_layers < c.n_layer &&
           fixed(plan.recompute_layers) + min_slot_bytes > plan.device_bytes) {
      ++plan.recompute_layers;
    }
  } else {
    plan.recompute_layers = in.recompute == "all" ? c.n_layer : 0;
  }
  plan.acts_bytes = acts(plan.recompute_layers);
  plan.min_device_bytes = fixed(plan.recompute_layers) + min_slot_bytes;
  if (plan.device_bytes < plan.min_device_bytes) {
    std::string msg =
        "--gpu-mem " + FormatBytes(plan.device_bytes) + " is below the " +
        FormatBytes(plan.min_device_bytes) + " (" + std::to_string(plan.min_device_bytes) +
        " bytes) that the minimal device "
        "working set needs: " +
        "block slots of " + DescribeSlots(min_slots) +
        " (what the tied head's backward and a block's backward hold at once + 1 prefetch), " +
        FormatBytes(plan.acts_bytes) +
        " of activations for "
        "--micro-batch " +
        std::to_string(in.micro_rows) + " --seq " + std::to_string(in.seq) + " and " +
        FormatBytes(plan.tokens_bytes) + " of tokens; raise --gpu-mem or lower --micro-batch/--seq";
    if (plan.recompute_layers < c.n_layer) msg += ", or use --recompute auto";
    return Status::ResourceExhausted(msg);
  }
  // The minimal list, then the useful list's further slots (largest first) while they fit.
  const uint64_t slot_room = plan.device_bytes - fixed(plan.recompute_layers);
  plan.slot_sizes = min_slots;
  uint64_t used = min_slot_bytes;
  std::vector<uint64_t> extra = useful;
  for (uint64_t s : min_slots) {  // what the minimal list already covers
    auto it = std::find_if(extra.begin(), extra.end(), [&](uint64_t e) { return e <= s; });
    if (it != extra.end()) extra.erase(it);
  }
  for (uint64_t s : extra) {
    if (used + s > slot_room) continue;
    plan.slot_sizes.push_back(s);
    used += s;
  }
  std::sort(plan.slot_sizes.begin(), plan.slot_sizes.end(), std::greater<>());
  plan.slots = static_cast<int>(plan.slot_sizes.size());
  const std::vector<uint64_t> resident = CoverBoth(min_slots, AllResidentSlotSizes(layout));
  const bool all_resident = CoverBoth(plan.slot_sizes, resident) == plan.slot_sizes;
  // auto fills the fastest tier first: parameters stay on the device when every block fits.
  if (params_on == "auto" && all_resident) params_on = "device";
  if (params_on == "device") {
    if (!all_resident) {
      return Status::ResourceExhausted(
          "--params-on device needs block slots of " + DescribeSlots(resident) +
          " (every block's parameters and the gradients beside them): " +
          FormatBytes(fixed(plan.recompute_layers) + TotalBytes(resident)) +
          " of --gpu-mem, which is " + FormatBytes(plan.device_bytes) +
          "; raise --gpu-mem or use --params-on host");
    }
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
      // params on device: the host pages are the master copy AdamW updates, pinned in the pool
      // when they fit beside the working pages (else they pass through it like nvme's).
      *out = Home::kDevice;
      plan.params_host_pinned = pages <= avail;
      if (plan.params_host_pinned) avail -= pages;
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
