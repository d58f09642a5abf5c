#include "parallel/grid.h"

#include "core/util/check.h"

namespace strata::parallel {

Result<Grid> Grid::Make(int world, int dp, int tp, int pp) {
  STRATA_CHECK(world >= 1);
  if (tp < 1) return Status::InvalidArgument("--tp must be at least 1, got " + std::to_string(tp));
  if (pp < 1) return Status::InvalidArgument("--pp must be at least 1, got " + std::to_string(pp));
  if (dp < 0) return Status::InvalidArgument("--dp must be at least 1, got " + std::to_string(dp));
  const int inner = tp * pp;
  if (dp == 0) {
    if (world % inner != 0) {
      return Status::InvalidArgument(
          "--tp " + std::to_string(tp) + " x --pp " + std::to_string(pp) + " = " +
          std::to_string(inner) + " does not divide the job's " + std::to_string(world) +
          " ranks: launch mpirun -np with a multiple of " + std::to_string(inner));
    }
    dp = world / inner;
  }
  if (dp * inner != world) {
    return Status::InvalidArgument(
        "--dp " + std::to_string(dp) + " x --tp " + std::to_string(tp) + " x --pp " +
        std::to_string(pp) + " = " + std::to_string(dp * inner) + " ranks, and this job has " +
        std::to_string(world) + ": launch mpirun -np " + std::to_string(dp * inner) +
        ", or give sizes whose product is " + std::to_string(world));
  }
  Grid g;
  g.dp_ = dp;
  g.tp_ = tp;
  g.pp_ = pp;
  return g;
}

GridCoord Grid::coord(int rank) const {
  STRATA_CHECK(rank >= 0 && rank < size());
  return {.dp = (rank / tp_) % dp_, .tp = rank % tp_, .pp = rank / (tp_ * dp_)};
}

std::vector<int> Grid::group(int rank, int GridCoord::*axis, int length) const {
  GridCoord c = coord(rank);
  std::vector<int> ranks;
  for (c.*axis = 0; c.*axis < length; ++(c.*axis)) ranks.push_back(rank_of(c));
  return ranks;
}

std::string Grid::describe() const {
  return "dp " + std::to_string(dp_) + " x tp " + std::to_string(tp_) + " x pp " +
         std::to_string(pp_);
}

}  // namespace strata::parallel
