#include "scheduler/placement_checks.h"

#include <utility>

#include "core/util/option.h"

namespace strata::scheduler {

using enum Option;  // the options named here

namespace {

Result<std::string> CheckChoice(const std::string& value, Option option) {
  if (value == "device" || value == "host" || value == "nvme" || value == "auto") return value;
  return NotOneOf(option, "device, host, nvme or auto", value);
}

}  // namespace

Status CheckRecompute(const std::string& recompute) {
  if (recompute == "none" || recompute == "all" || recompute == "auto") return Status::Ok();
  return NotOneOf(kRecompute, "none, all or auto", recompute);
}

Status CheckPlacement(const PlacementChoice& in, std::string* params_on,
                      std::string* optimizer_on) {
  STRATA_ASSIGN_OR_RETURN(*params_on, CheckChoice(in.params_on, kParamsOn));
  STRATA_ASSIGN_OR_RETURN(*optimizer_on, CheckChoice(in.optimizer_on, kOptimizerOn));
  STRATA_RETURN_IF_ERROR(CheckRecompute(in.recompute));
  const std::string& order = in.micro_batch_order;
  if (order != "auto" && order != "layer-major" && order != "micro-batch-major") {
    return NotOneOf(kMicroBatchOrder, "auto, layer-major or micro-batch-major", order);
  }
  if (in.micro_batch_order == "layer-major" && in.recompute == "none" && in.micro_batches > 1) {
    return AtFault(
        kMicroBatchOrder,
        Status::InvalidArgument(Mention(kMicroBatchOrder) +
                                " layer-major recomputes every block (the activations of every "
                                "micro-batch would have to wait for backward); use " +
                                Mention(kRecompute) + " all or auto, or " +
                                Mention(kMicroBatchOrder) + " micro-batch-major"));
  }
  if (*optimizer_on == "device") {
    return AtFault(
        kOptimizerOn,
        Status::NotSupported(Mention(kOptimizerOn) +
                             " device (AdamW on the device) is not implemented yet; use host "
                             "or nvme (AdamW then runs on the host over TBB)"));
  }
  for (const auto& [value, option] :
       {std::pair{*params_on, kParamsOn}, std::pair{*optimizer_on, kOptimizerOn}}) {
    if (value == "nvme" && !in.has_nvme) {
      return AtFault(option,
                     Status::InvalidArgument(Mention(option) + " nvme needs " + Mention(kNvmeDir)));
    }
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
