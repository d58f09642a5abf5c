// Timeline: what ran on which queue and when — the source of the per-step overlap figure and of
// the --trace Chrome trace (chrome://tracing, Perfetto: one track per queue, one slice per op or
// move with its bytes).
//
// Queues: compute, h2d, d2h, fetch (host pages acquired by the driver for moves: NVMe reads
// and the write-backs that make room happen here), optimizer io (the pages AdamW acquires: NVMe
// reads of moments and write-backs), optimizer (AdamW arithmetic on the host). Times are
// nanoseconds since the Timeline was created (steady clock).
//
// Threads: add() and now_ns() from any thread (mu_ guards the slices). overlap() and
// write_chrome_trace() read a snapshot.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace strata::scheduler {

enum class Queue : uint8_t {
  kCompute = 0,
  kH2D,
  kD2H,
  kFetch,
  kOptimizerIo,
  kOptimizer,
  kD2HFirst,  // the embedding's gradient, ahead of the others (Note [Gradient order])
  kRefresh,   // parameter uploads right after their update (Note [Eager refresh] in engine.h)
  kComm,      // data parallelism: collectives over the ranks (all-gathers, gradient sums)
};
inline constexpr int kNumQueues = 9;
const char* QueueName(Queue queue);

struct Slice {
  Queue queue = Queue::kCompute;
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t bytes = 0;
  long step = 0;
};

class Timeline {
 public:
  Timeline();
  int64_t now_ns() const;
  void add(Slice slice);
  // Fraction of [t0, t1) in which a compute slice overlapped a movement slice (h2d, d2h, fetch,
  // optimizer io).
  double overlap(int64_t t0_ns, int64_t t1_ns) const;
  // Drops slices that ended before t_ns unless they are kept for the trace.
  void forget(int64_t before_ns);
  // Writes `path` through a temporary beside it; an errno's Status at fault of {trace} when it
  // cannot be opened, written or renamed.
  Status write_chrome_trace(const std::string& path) const;
  void set_keep_all(bool keep) { keep_all_ = keep; }

 private:
  const int64_t origin_ns_;
  bool keep_all_ = false;
  mutable std::mutex mu_;
  std::vector<Slice> slices_;
};

}  // namespace strata::scheduler
