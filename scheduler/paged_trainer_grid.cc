// PagedTrainer on the grid (parallel/grid.h): the Comms of this rank's groups, and the copies
// between the whole model (--init, --export) and this rank's tensor-parallel slice of it (Note
// [Tensor-parallel slices] in core/nn/tp_layout.h).
#include <algorithm>
#include <vector>

#include "scheduler/paged_trainer_impl.h"

namespace strata::internal {

// Note [Rank order] in parallel/grid.h: a group's color is the rank's other two coordinates, its
// key the coordinate along the group, so a group's Comm ranks run along its axis.
Status PagedTrainer::make_grid() {
  world_ = o_.ranks;
  STRATA_ASSIGN_OR_RETURN(grid_, parallel::Grid::Make(world_size(), o_.dp, o_.tp, o_.pp));
  if (o_.tp == 1 && o_.pp == 1) return Status::Ok();  // the job is one data-parallel group
  const parallel::GridCoord me = grid_.coord(world_rank());
  STRATA_ASSIGN_OR_RETURN(tp_comm_, world_->split(me.pp * grid_.dp() + me.dp, me.tp));
  STRATA_ASSIGN_OR_RETURN(dp_comm_, world_->split(me.pp * grid_.tp() + me.tp, me.dp));
  o_.ranks = dp_comm_.get();
  return Status::Ok();
}

void PagedTrainer::slice_block(int block, const float* full, float* local) const {
  if (o_.tp == 1) {
    std::copy_n(full, layout_.blocks[block].numel, local);
    return;
  }
  SliceBlockParams(full_layout_.blocks[block], layout_.blocks[block], tp_rank(), full, local);
}

// Every tp rank's slice gathered (in rank order), each put back at its place.
Status PagedTrainer::unslice_block(int block, const float* local, float* full) {
  const int64_t n = layout_.blocks[block].numel;
  if (o_.tp == 1) {
    std::copy_n(local, n, full);
    return Status::Ok();
  }
  std::vector<float> all(size_t(n) * o_.tp);
  STRATA_RETURN_IF_ERROR(tp_comm_->all_gather(local, all.data(), size_t(n) * 4).wait());
  for (int t = 0; t < o_.tp; ++t) {
    UnsliceBlockParams(full_layout_.blocks[block], layout_.blocks[block], t,
                       all.data() + int64_t(t) * n, full);
  }
  return Status::Ok();
}

}  // namespace strata::internal
