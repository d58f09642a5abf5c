// The tensor-parallel group an op runs in: this rank's place in it and the group's all-reduce,
// which the runtime provides (scheduler/model_ops.cc runs it on the tp Comm). A model's ops on a
// tensor-parallel slice (Model::tensor_parallel_rank) see it in OpShape::tp.
#pragma once

#include <cstdint>
#include <functional>

namespace strata {

// Sums `count` floats at `data` in place over the tp group (every rank calls it at the same
// points, in the same order; the sum runs in rank order, so the same bits on every rank).
using TpAllReduce = std::function<void(float* data, int64_t count)>;

struct TpGroup {
  int rank = 0;
  int size = 1;
  TpAllReduce all_reduce;
};

}  // namespace strata
