// PagedTrainer's model state in and out of its pages: the initial parameters (--init or the
// seed's) or a checkpoint's, the moments of a store started over, and --export / --export-grads
// (each block whole, from this rank's slice and shards: paged_trainer_grid.cc,
// paged_trainer_shards.cc).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/util/log.h"
#include "scheduler/paged_trainer_impl.h"
#include "scheduler/state_pages.h"

namespace strata::internal {

// A resume's state is the checkpoint's (the manager adopted its pages); a fresh run's is written.
Status PagedTrainer::load_state() {
  if (resume_from_) {
    // The manager adopted the manifest's pages as committed NVMe copies (they load on demand).
    Logger("train")->info("resuming after step {} from {} ({})", start_step_,
                          resume_from_->manifest, o_.checkpoints.dir);
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(write_initial_params());
  if (nvme_ && !nvme_->committed_pages().empty()) STRATA_RETURN_IF_ERROR(reset_moments());
  return Status::Ok();
}

// The whole model's initial values (the same bits as one rank's), block by block (--init's are
// read a block at a time: a model larger than memory is never whole), each block cut to this
// rank's tensor-parallel slice.
Status PagedTrainer::write_initial_params() {
  std::unique_ptr<WeightReader> init;
  if (!o_.model.init_path.empty()) {
    STRATA_ASSIGN_OR_RETURN(init, model_->open_weights(o_.model.init_path));
  }
  std::vector<float> whole, mine;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    if (!shards_.held(b)) continue;  // another stage's
    whole.assign(full_layout_.blocks[b].numel, 0.0f);
    if (init) {
      STRATA_RETURN_IF_ERROR(init->read_block(b, whole.data()));
    } else {
      InitBlockParams(full_layout_.blocks[b], o_.seed, whole.data());
    }
    mine.assign(layout_.blocks[b].numel, 0.0f);
    slice_block(b, whole.data(), mine.data());
    STRATA_RETURN_IF_ERROR(scheduler::WriteBlockPages(*mm_, *pages_, b, Role::kParam, mine.data()));
    if (o_.optimizer.delayed_update) {
      STRATA_RETURN_IF_ERROR(
          scheduler::WriteBlockPages(*mm_, *pages_, b, Role::kMaster, mine.data()));
    }
  }
  if (init) Logger("train")->info("{}", init->summary());
  return Status::Ok();
}

// A fresh start over a store left by killed runs that never checkpointed (--resume with no
// record yet): the MemoryManager adopts every committed page as valid, so the moments are reset
// to zeros explicitly (the parameters are written anyway, gradients are overwritten each step).
Status PagedTrainer::reset_moments() {
  std::vector<float> zeros;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    if (!shards_.held(b)) continue;
    zeros.assign(layout_.blocks[b].numel, 0.0f);
    for (Role r : {Role::kAdamM, Role::kAdamV}) {
      STRATA_RETURN_IF_ERROR(scheduler::WriteBlockPages(*mm_, *pages_, b, r, zeros.data()));
    }
  }
  return Status::Ok();
}

// The whole model's values of `role`, block by block (never the whole model in memory), each
// gathered from this rank's shards and slice and, under --pp, from the stage that holds it; rank
// 0 writes them to `path` (safetensors). Rank 0's failure to create the file is reported after
// the blocks' collectives, which every rank runs.
Status PagedTrainer::export_role(Role role, const std::string& path) {
  std::unique_ptr<WeightWriter> out;
  Status created = Status::Ok();
  if (world_rank() == 0) {  // rank 0 alone writes (docs/parallel.md)
    Result<std::unique_ptr<WeightWriter>> w = model_->create_weights(path);
    if (w.ok()) out = std::move(*w);
    created = w.status();
  }
  std::vector<float> block_values, mine;
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    block_values.assign(full_layout_.blocks[b].numel, 0.0f);
    float* whole = block_values.data();
    if (shards_.held(b)) {
      mine.assign(layout_.blocks[b].numel, 0.0f);
      STRATA_RETURN_IF_ERROR(gather_block(b, role, mine.data()));
      STRATA_RETURN_IF_ERROR(unslice_block(b, mine.data(), whole));
    }
    if (piped()) {  // from the stage that holds it
      STRATA_RETURN_IF_ERROR(
          groups_.pipe()
              .tied
              ->broadcast(whole, size_t(full_layout_.blocks[b].numel) * 4,
                          groups_.stage_of(b, layout_.num_blocks()))
              .wait()
              .with_context("gathering block " + std::to_string(b) + " over the stages"));
    }
    if (out) STRATA_RETURN_IF_ERROR(out->write_block(b, whole));
  }
  STRATA_RETURN_IF_ERROR(created);
  return out ? out->commit() : Status::Ok();
}

}  // namespace strata::internal
