#include "scheduler/grid_checks.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/nn/tp_layout.h"
#include "core/util/option.h"
#include "scheduler/pipeline_plan.h"

namespace strata {
namespace {

using enum Option;

// What is not built yet with --tp or --pp, and what a pipeline's schedule decides itself.
Status RefuseUnbuiltGrids(const TrainOptions& o) {
  const std::string tp = std::to_string(o.grid.tp), pp = std::to_string(o.grid.pp);
  if (o.grid.tp > 1 && o.grid.shard != "none") {
    return AtFault(kShard, Status::NotSupported(
                               Mention(kShard) + " " + o.grid.shard + " with " + Mention(kTp) +
                               " " + tp + " is not built yet; give " + Mention(kShard) + " none"));
  }
  if (o.grid.tp > 1 && o.grid.split_ops != "1") {
    return AtFault(
        kSplitOps,
        Status::NotSupported(Mention(kSplitOps) + " " + o.grid.split_ops + " with " + Mention(kTp) +
                             " " + tp + " is not built yet; give " + Mention(kSplitOps) + " 1"));
  }
  if (o.grid.pp > 1 && (o.grid.shard == "auto" || o.grid.split_ops != "1")) {
    return AtFault(kPp,
                   Status::NotSupported(Mention(kPp) + " " + pp + " with " + Mention(kShard) +
                                        " auto or " + Mention(kSplitOps) + " " + o.grid.split_ops +
                                        " is not built yet; give " + Mention(kShard) +
                                        " none or all and " + Mention(kSplitOps) + " 1"));
  }
  if (o.grid.pp > 1 && o.budgets.micro_batch_order == "layer-major") {
    return AtFault(
        kMicroBatchOrder,
        Status::InvalidArgument(Mention(kPp) + " " + pp +
                                " runs each stage's micro-batches in its "
                                "schedule's order (" +
                                Mention(kSchedule) + "): drop " + Mention(kMicroBatchOrder) +
                                " "
                                "layer-major"));
  }
  return Status::Ok();
}

// Split operators need the family's split ops (Model::splits_layers).
Status RefuseUnbuiltForModel(const TrainOptions& o, const Model& m) {
  if (o.grid.split_ops == "1" || m.splits_layers()) return Status::Ok();
  return AtFault(kSplitOps,
                 Status::NotSupported(Mention(kSplitOps) + " " + o.grid.split_ops +
                                      " has no split operators for " + Mention(kArch) + " " +
                                      m.shape().arch + " yet: drop " + Mention(kSplitOps)));
}

// The partition's text and the stage count (scheduler/pipeline_plan.h); auto's costs are
// measured when the stages are built, any will do to check the text.
Status ValidatePartition(const TrainOptions& o, int n_layer) {
  return scheduler::PartitionStages(
             o.grid.pp_partition, o.grid.pp, n_layer,
             {.blocks = std::vector<double>(size_t(std::max(n_layer, 0)), 1.0)})
      .status();
}

// --tp over the model's description (Note [Tensor-parallel slices] in core/nn/tp_layout.h): it
// must divide every cut, and the family must have tensor-parallel ops.
Status ValidateTensorParallel(const TrainOptions& o, const Model& m) {
  if (o.grid.tp == 1) return Status::Ok();
  const std::string tp = Mention(kTp) + " " + std::to_string(o.grid.tp);
  if (const TensorSpec* bad = TpIndivisible(m.layout(), o.grid.tp)) {
    const int64_t units = TpCutUnits(*bad);
    const std::string what = bad->tp == TpRule::kVocab
                                 ? "the vocabulary of " + std::to_string(m.shape().vocab_size) +
                                       " tokens padded to " + std::to_string(units)
                                 : "the " + std::to_string(units) +
                                       (bad->tp_unit > 1 ? " attention heads" : " features") +
                                       " of " + bad->name;
    return AtFault(kTp,
                   Status::InvalidArgument(tp + " does not divide " + what + ": give a " +
                                           Mention(kTp) + " that divides " + std::to_string(units)),
                   {{"got", o.grid.tp}, {"units", units}});
  }
  for (const BlockSpec& b : m.layout().blocks) {
    for (const TensorSpec& t : b.tensors) {
      // A rank's logits of its vocabulary slice live where the whole model's would.
      const int64_t rows = t.tp == TpRule::kVocab ? TpCutUnits(t) / o.grid.tp : 0;
      if (rows <= m.shape().vocab_size) continue;
      return AtFault(kVocab,
                     Status::InvalidArgument(tp + " gives each rank " + std::to_string(rows) +
                                             " rows of the vocabulary padded to " +
                                             std::to_string(TpCutUnits(t)) + ", more than its " +
                                             std::to_string(m.shape().vocab_size) +
                                             " tokens: give a larger " + Mention(kVocab)),
                     {{"got", m.shape().vocab_size}, {"tp", o.grid.tp}});
    }
  }
  if (m.tensor_parallel_rank(o.grid.tp) == nullptr) {
    return AtFault(kTp,
                   Status::NotSupported(tp + " has no tensor-parallel ops for " + m.shape().arch +
                                        ": drop " + Mention(kTp)),
                   {{"got", o.grid.tp}});
  }
  return Status::Ok();
}

}  // namespace

Status ValidateGridForModel(const TrainOptions& o, const Model& m) {
  STRATA_RETURN_IF_ERROR(ValidateTensorParallel(o, m));
  STRATA_RETURN_IF_ERROR(RefuseUnbuiltForModel(o, m));
  STRATA_RETURN_IF_ERROR(ValidatePartition(o, m.shape().n_layer));
  return RefuseUnbuiltGrids(o);
}

}  // namespace strata
