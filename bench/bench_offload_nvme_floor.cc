// `strata bench offload`, measurement 5: the least NVMe traffic a step can have, computed from
// the run's own page plan and placement (bench/bench_offload.h).
//
// Note [NVMe floor]
// A step must read from NVMe what lives there and is used, and write back what it changes:
//   - a parameter page on NVMe is read twice (forward, then backward: between the two every
//     other block passes through the device and the host pool, which a model this far beyond
//     its budgets cannot hold) and written once (its update);
//   - an AdamW moment page (adam_m, adam_v) on NVMe is read once and written once (its update);
//   - gradients never touch NVMe: each is made in backward and consumed by its update.
// Parameters homed on the device whose host master copy is not pinned (it did not fit the pool)
// pass through the pool for their update only: read once, written once. Pages on the host tier
// move nothing. The page counts and the homes are the ones the paged trainer computes
// (StatePages::Make and MakeMemoryPlan with the same input as PagedTrainer::make_plan), so the
// floor follows the page padding and any placement flag instead of a formula typed in here.
#include <algorithm>

#include "bench/bench_offload.h"
#include "memory/page_plan.h"
#include "scheduler/memory_plan.h"
#include "scheduler/model_registry.h"
#include "scheduler/state_pages.h"

namespace strata::bench::offload {
namespace {

using memory::Role;
using memory::Tier;

// PagedTrainer::make_plan's input for `o` over the pages `sp`.
scheduler::MemoryPlanInput PlanInput(const TrainOptions& o, const Model& model, int seq,
                                     const scheduler::StatePages& sp) {
  scheduler::MemoryPlanInput in;
  in.model = &model;
  in.layout = &model.layout();
  in.micro_rows = o.data.micro_batch > 0 ? o.data.micro_batch : o.data.batch;
  in.batch = o.data.batch;
  in.seq = seq;
  in.gpu_mem = o.budgets.gpu_mem;
  in.host_mem = o.budgets.host_mem;
  in.has_nvme = !o.budgets.nvme_dirs.empty();
  in.page_bytes = sp.page_bytes();
  in.param_pages = sp.pages_of_role(Role::kParam);
  in.grad_pages = sp.pages_of_role(Role::kGrad);
  in.moment_pages = sp.pages_of_role(Role::kAdamM) + sp.pages_of_role(Role::kAdamV) +
                    (o.optimizer.delayed_update ? sp.pages_of_role(Role::kMaster) : 0);
  in.params_on = o.budgets.params_on;
  in.optimizer_on = o.budgets.optimizer_on;
  in.recompute = o.budgets.recompute;
  return in;
}

}  // namespace

Result<NvmeFloor> ComputeNvmeFloor(const TrainOptions& o) {
  STRATA_ASSIGN_OR_RETURN(const std::unique_ptr<Model> resolved, ResolveModel(o.model));
  const Model& model = *resolved;
  const ModelLayout& layout = model.layout();
  const uint64_t page = o.budgets.page_bytes > 0 ? o.budgets.page_bytes : memory::kDefaultPageBytes;
  STRATA_ASSIGN_OR_RETURN(const scheduler::StatePages sp,
                          scheduler::StatePages::Make(layout, page, o.optimizer.delayed_update));
  // The trainer's default seq: min(block_size, 256) (TrainOptions::seq).
  const int seq = o.data.seq > 0 ? o.data.seq : std::min(model.shape().block_size, 256);
  STRATA_ASSIGN_OR_RETURN(const scheduler::MemoryPlan plan,
                          scheduler::MakeMemoryPlan(PlanInput(o, model, seq, sp)));
  NvmeFloor f;
  f.page_bytes = sp.page_bytes();
  f.state_bytes = sp.plan().total_bytes();
  f.param_pages = sp.pages_of_role(Role::kParam);
  f.moment_pages = sp.pages_of_role(Role::kAdamM) + sp.pages_of_role(Role::kAdamV);
  f.params = plan.params;
  f.optimizer = plan.optimizer;
  f.params_host_pinned = plan.params_host_pinned;
  const bool nvme = !o.budgets.nvme_dirs.empty();
  uint64_t read_pages = 0, write_pages = 0;
  if (plan.params == Tier::kNvme) {
    read_pages += 2 * f.param_pages;
    write_pages += f.param_pages;
  } else if (plan.params == Tier::kDevice && nvme && !plan.params_host_pinned) {
    read_pages += f.param_pages;
    write_pages += f.param_pages;
  }
  if (plan.optimizer == Tier::kNvme) {
    read_pages += f.moment_pages;
    write_pages += f.moment_pages;
  }
  f.read_bytes = read_pages * f.page_bytes;
  f.write_bytes = write_pages * f.page_bytes;
  return f;
}

}  // namespace strata::bench::offload
