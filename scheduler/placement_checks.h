// The placement options of a paged run, checked before the memory plan is made: where the
// parameters and the optimizer's state live (--params-on, --optimizer-on), what is recomputed
// (--recompute) and the micro-batch order. Each refusal is at fault of its option (OptionFault).
#pragma once

#include <string>

#include "core/util/status.h"

namespace strata::scheduler {

// InvalidArgument naming the option unless `recompute` is none, all or auto.
Status CheckRecompute(const std::string& recompute);

// The options as given (MemoryPlanInput's), and what they are checked against.
struct PlacementChoice {
  std::string params_on, optimizer_on, recompute, micro_batch_order;
  int micro_batches = 1;  // per step and rank
  bool has_nvme = false;  // an NVMe tier was given
};

// The placement options, checked; `params_on` and `optimizer_on` receive their values.
Status CheckPlacement(const PlacementChoice& in, std::string* params_on, std::string* optimizer_on);

}  // namespace strata::scheduler
