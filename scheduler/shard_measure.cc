#include "scheduler/shard_measure.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "core/util/check.h"

namespace strata::scheduler {

namespace {

double Seconds(const std::function<void()>& run) {
  const auto t0 = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The median of three timed runs after a warm-up, the slowest rank's.
Result<double> TimeCollective(parallel::Comm& comm, const std::function<Status()>& op) {
  STRATA_RETURN_IF_ERROR(op());
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    STRATA_RETURN_IF_ERROR(comm.barrier());
    Status st;
    t.push_back(Seconds([&] { st = op(); }));
    STRATA_RETURN_IF_ERROR(st);
  }
  std::sort(t.begin(), t.end());
  std::vector<double> all(size_t(comm.size()));
  STRATA_RETURN_IF_ERROR(comm.all_gather(&t[1], all.data(), sizeof(double)).wait());
  return std::max(1e-9, *std::max_element(all.begin(), all.end()));
}

}  // namespace

Result<CollectiveRates> MeasureCollectiveRates(parallel::Comm& comm, uint64_t bytes) {
  const size_t each = std::max<size_t>(1, size_t(bytes / 4 / comm.size()));
  const size_t n = each * comm.size();
  std::vector<float> buf(n, 1.0f);
  float* mine = buf.data() + each * comm.rank();
  const double whole = double(n) * 4;
  CollectiveRates r;
  STRATA_ASSIGN_OR_RETURN(double ag, TimeCollective(comm, [&] {
                            return comm.all_gather(mine, buf.data(), each * 4).wait();
                          }));
  STRATA_ASSIGN_OR_RETURN(double rs, TimeCollective(comm, [&] {
                            return comm.reduce_scatter_sum(buf.data(), mine, each).wait();
                          }));
  r.all_gather = whole / ag;
  r.reduce_scatter = whole / rs;
  return r;
}

BlockForwardTimes MeasureBlockForwards(const KernelTable& k, const GptConfig& c, int rows,
                                       int threads) {
  // GEMM time grows linearly with the rows and the output columns once they fill the kernel's
  // tiles: time at most kRows rows and kLogits columns of the logits, and scale, so that a large
  // micro-batch or vocabulary costs no large buffers at start-up.
  constexpr int kRows = 512, kLogits = 8192;
  const int n = std::min(rows, kRows), C = c.n_embd, V = std::min(c.vocab_size, kLogits);
  const double scale_rows = double(rows) / n, scale_vocab = double(c.vocab_size) / V;
  const size_t widest = size_t(std::max(4 * C, V));
  std::vector<float> in(size_t(n) * 4 * C, 0.01f), out(size_t(n) * widest);
  std::vector<float> w(std::max(size_t(4) * C * C, size_t(C) * V), 0.01f), bias(widest, 0.0f);
  tbb::task_arena arena(std::max(1, threads));
  BlockForwardTimes t;
  auto transformer = [&] {
    k.linear_forward(out.data(), in.data(), w.data(), bias.data(), n, C, 3 * C);
    k.linear_forward(out.data(), in.data(), w.data(), bias.data(), n, C, C);
    k.linear_forward(out.data(), in.data(), w.data(), bias.data(), n, C, 4 * C);
    k.linear_forward(out.data(), in.data(), w.data(), bias.data(), n, 4 * C, C);
  };
  auto logits = [&] { k.linear_forward(out.data(), in.data(), w.data(), nullptr, n, C, V); };
  arena.execute([&] {
    transformer();
    t.transformer = Seconds(transformer) * scale_rows;
    logits();
    t.logits = Seconds(logits) * scale_rows * scale_vocab;
  });
  return t;
}

std::vector<ShardSearchBlock> ShardSearchInputs(const ShardSearchSetting& s) {
  const GptLayout& layout = *s.layout;
  const ShardPlan& shards = *s.all_sharded;
  const int n = layout.num_blocks();
  const double per_step = 3.0 * s.micro_batches;  // forward + backward (2x) per micro-batch
  const double gathers = 2.0 * s.micro_batches;
  std::vector<ShardSearchBlock> out(n);
  for (int b = 0; b < n; ++b) {
    ShardSearchBlock& x = out[b];
    const double bytes = double(shards.gathered_floats(b)) * 4;
    x.replicated_bytes = s.replicated_bytes[b];
    x.sharded_bytes = s.sharded_bytes[b];
    x.replicated_comm_s = s.rates.all_reduce_s(bytes);
    x.sharded_comm_s = gathers * bytes / s.rates.all_gather + bytes / s.rates.reduce_scatter;
    if (b == 0) {  // the embedding: its heads' wte part is all-reduced first either way
      const double wte = s.rates.all_reduce_s(double(layout.embedding().tensors[kWte].numel) * 4);
      x.replicated_comm_s += wte;
      x.sharded_comm_s += wte;
      x.compute_s = per_step * s.forward.logits;
    } else if (b + 1 < n) {
      x.compute_s = per_step * s.forward.transformer;
    }
  }
  return out;
}

}  // namespace strata::scheduler
