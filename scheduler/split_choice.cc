#include "scheduler/split_choice.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/util/option.h"
#include "core/util/sizes.h"

namespace strata::scheduler {

Result<SplitChoice> ChooseSplit(const SplitChoiceInput& in, MemoryPlanInput in_plan) {
  const ModelLayout& layout = *in.layout;
  const ShardPlan& shards = *in.shards;
  bool splittable = false;
  for (int b = 1; b + 1 < layout.num_blocks(); ++b) splittable |= shards.sharded(b);
  const bool automatic = in.split_ops == "auto" && splittable;
  std::vector<int> factors = {1};
  if (automatic) factors = {1, 2, 4};
  if (in.split_ops != "auto") factors = {std::stoi(in.split_ops)};  // checked: 1, 2 or 4
  SplitChoice choice;
  for (int k : factors) {
    STRATA_ASSIGN_OR_RETURN(choice.split,
                            SplitPlan::Make(layout, shards, SplitFactors(k, shards, layout)));
    const ModelLayout param_layout = ParamSlotLayout(*in.gathered_layout, choice.split);
    in_plan.param_layout = &param_layout;
    in_plan.slice_bytes = uint64_t(2) * choice.split.slice_buffer_floats() * 4;
    Result<MemoryPlan> plan = MakeMemoryPlan(in_plan);
    const bool last = k == factors.back();
    if (!plan.ok() && plan.status().code() != StatusCode::kResourceExhausted) return plan.status();
    if (automatic) {
      uint8_t fits = plan.ok() ? 1 : 0;
      std::vector<uint8_t> all(static_cast<size_t>(in.ranks->size()));
      STRATA_RETURN_IF_ERROR(in.ranks->all_gather(&fits, all.data(), 1).wait());
      const bool everywhere = std::find(all.begin(), all.end(), 0) == all.end();
      if (!everywhere && !last) continue;
      if (!everywhere && plan.ok()) {
        return AtFault(Option::kGpuMem,
                       Status::ResourceExhausted(
                           Mention(Option::kSplitOps) + " auto: " + Mention(Option::kGpuMem) + " " +
                           FormatBytes(in.gpu_mem) + " is too small for another rank even with " +
                           std::to_string(k) + " slices; raise " + Mention(Option::kGpuMem)),
                       {{"got", FaultNumber(in.gpu_mem)}, {"slices", k}});
      }
    } else if (!plan.ok() && !last) {
      continue;
    }
    if (!plan.ok()) return plan.status();
    choice.plan = std::move(*plan);
    choice.how = choice.split.describe();
    if (automatic) {
      choice.how +=
          k == 1 ? " (auto: whole blocks fit " + Mention(Option::kGpuMem) + ")"
                 : " (auto: the fewest slices with which " + Mention(Option::kGpuMem) + " fits)";
    }
    return choice;
  }
  return Status::Internal("no " + Mention(Option::kSplitOps) +
                          " factor was tried");  // the last one returns
}

}  // namespace strata::scheduler
