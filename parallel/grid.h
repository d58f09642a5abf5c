// Grid: the ranks of a job as a 3D grid of data-, tensor- and pipeline-parallel coordinates
// (docs/parallel.md, "The grid"). Pure data; any thread.
//
// Note [Rank order]
// Ranks are ordered tensor-parallel innermost, then data-parallel, then pipeline-parallel:
//   rank = (pp * dp_size + dp) * tp_size + tp.
// Tensor-parallel peers exchange the most (an all-reduce after every row-parallel linear), so
// they get consecutive ranks, which launchers place on the same machine (mpirun fills a host's
// slots in rank order). Pipeline stages exchange least (one activation per micro-batch), so
// they are the outermost axis and may cross machines.
#pragma once

#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::parallel {

struct GridCoord {
  int dp = 0, tp = 0, pp = 0;
  bool operator==(const GridCoord&) const = default;
};

class Grid {
 public:
  Grid() = default;  // one rank
  // The grid of a job of `world` ranks from --dp (0: world / (tp * pp)), --tp and --pp.
  // InvalidArgument, naming the flag, when a size is not positive or dp * tp * pp != world.
  static Result<Grid> Make(int world, int dp, int tp, int pp);

  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int size() const { return dp_ * tp_ * pp_; }
  GridCoord coord(int rank) const;
  int rank_of(GridCoord c) const { return (c.pp * dp_ + c.dp) * tp_ + c.tp; }
  // The ranks that share `rank`'s other two coordinates, in order along the axis: its
  // tensor-parallel group, its data-parallel group, its pipeline (one rank per stage).
  std::vector<int> tp_group(int rank) const { return group(rank, &GridCoord::tp, tp_); }
  std::vector<int> dp_group(int rank) const { return group(rank, &GridCoord::dp, dp_); }
  std::vector<int> pp_group(int rank) const { return group(rank, &GridCoord::pp, pp_); }
  // "dp 2 x tp 2 x pp 2"
  std::string describe() const;

 private:
  // The ranks along `axis` (of `length`) through `rank`'s coordinates.
  std::vector<int> group(int rank, int GridCoord::*axis, int length) const;

  int dp_ = 1, tp_ = 1, pp_ = 1;
};

}  // namespace strata::parallel
