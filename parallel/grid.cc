#include "parallel/grid.h"

#include "core/util/check.h"
#include "core/util/option.h"

namespace strata::parallel {

Result<Grid> Grid::Make(int world, int dp, int tp, int pp) {
  STRATA_CHECK(world >= 1);
  auto at_least_one = [](Option option, int got) {
    return AtFault(option,
                   Status::InvalidArgument(Mention(option) + " must be at least 1, got " +
                                           std::to_string(got)),
                   {{"got", got}});
  };
  if (tp < 1) return at_least_one(Option::kTp, tp);
  if (pp < 1) return at_least_one(Option::kPp, pp);
  if (dp < 0) return at_least_one(Option::kDp, dp);
  const int inner = tp * pp;
  if (dp == 0) {
    if (world % inner != 0) {
      return AtFault(Option::kTp,
                     Status::InvalidArgument(Mention(Option::kTp) + " " + std::to_string(tp) +
                                             " x " + Mention(Option::kPp) + " " +
                                             std::to_string(pp) + " = " + std::to_string(inner) +
                                             " does not divide the job's " + std::to_string(world) +
                                             " ranks: launch mpirun -np with a multiple of " +
                                             std::to_string(inner)),
                     {{"tp", tp}, {"pp", pp}, {"ranks", world}});
    }
    dp = world / inner;
  }
  if (dp * inner != world) {
    return AtFault(
        Option::kDp,
        Status::InvalidArgument(
            Mention(Option::kDp) + " " + std::to_string(dp) + " x " + Mention(Option::kTp) + " " +
            std::to_string(tp) + " x " + Mention(Option::kPp) + " " + std::to_string(pp) + " = " +
            std::to_string(dp * inner) + " ranks, and this job has " + std::to_string(world) +
            ": launch mpirun -np " + std::to_string(dp * inner) +
            ", or give sizes whose product is " + std::to_string(world)),
        {{"dp", dp}, {"tp", tp}, {"pp", pp}, {"ranks", world}});
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
