#include "scheduler/shard_measure.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "core/util/check.h"
#include "scheduler/device_buffers.h"

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

namespace {

// Floats per rank of MeasureCollectiveRates's buffer.
size_t CollectiveFloatsPerRank(const parallel::Comm& comm, uint64_t bytes) {
  return std::max<size_t>(1, size_t(bytes / 4 / comm.size()));
}

// The shapes MeasureBlockForwards times: a layer's linears, one per 2-D tensor of the model's
// first layer (x @ W over its two dimensions), and the head's logits (C, V). GEMM time grows
// linearly with the rows and the output columns once they fill the kernel's tiles: time at most
// kRows rows and kLogits columns of the logits, and scale, so that a large micro-batch or
// vocabulary costs no large buffers at start-up.
struct ForwardShapes {
  ForwardShapes(const Model& m, int rows)
      : n(std::min(rows, kRows)),
        C(m.shape().n_embd),
        V(std::min(m.shape().vocab_size, kLogits)),
        scale_rows(double(rows) / n),
        scale_vocab(double(m.shape().vocab_size) / V) {
    STRATA_CHECK(m.layout().num_layers() > 0) << "a model without layers";
    for (const TensorSpec& t : m.layout().blocks[1].tensors) {
      if (t.shape.size() == 2) linears.emplace_back(int(t.shape[0]), int(t.shape[1]));
    }
    widest = size_t(V);
    w = size_t(C) * V;
    for (const auto& [a, b] : linears) {
      widest = std::max({widest, size_t(a), size_t(b)});
      w = std::max(w, size_t(a) * b);
    }
  }
  static constexpr int kRows = 512, kLogits = 8192;
  int n, C, V;
  double scale_rows, scale_vocab;
  std::vector<std::pair<int, int>> linears;  // (in, out)
  size_t widest = 0, w = 0;
  size_t in_floats() const { return size_t(n) * widest; }
  size_t out_floats() const { return size_t(n) * widest; }
  size_t w_floats() const { return w; }
  size_t floats() const { return in_floats() + out_floats() + w_floats() + widest; }
};

}  // namespace

uint64_t CollectiveRatesBytes(const parallel::Comm& comm, uint64_t bytes) {
  return uint64_t(CollectiveFloatsPerRank(comm, bytes)) * comm.size() * 4;
}

Result<CollectiveRates> MeasureCollectiveRates(parallel::Comm& comm, Device& device,
                                               uint64_t bytes) {
  const size_t each = CollectiveFloatsPerRank(comm, bytes);
  const size_t n = each * comm.size();
  DeviceBuffers buffers(device);
  STRATA_ASSIGN_OR_RETURN(void* mem, buffers.alloc(n * 4, "the collectives' timing buffer"));
  float* buf = static_cast<float*>(mem);
  const std::vector<float> ones(n, 1.0f);  // finite values (the reduce-scatter adds them)
  std::unique_ptr<Stream> stream = device.create_stream("measure");
  STRATA_RETURN_IF_ERROR(
      device.copy_async(buf, ones.data(), n * 4, CopyKind::kHostToDevice, *stream));
  STRATA_RETURN_IF_ERROR(stream->synchronize());
  float* mine = buf + each * comm.rank();
  const double whole = double(n) * 4;
  CollectiveRates r;
  STRATA_ASSIGN_OR_RETURN(double ag, TimeCollective(comm, [&] {
                            return comm.all_gather(mine, buf, each * 4).wait();
                          }));
  STRATA_ASSIGN_OR_RETURN(double rs, TimeCollective(comm, [&] {
                            return comm.reduce_scatter_sum(buf, mine, each).wait();
                          }));
  r.all_gather = whole / ag;
  r.reduce_scatter = whole / rs;
  return r;
}

uint64_t BlockForwardBytes(const Model& model, int rows) {
  return uint64_t(ForwardShapes(model, rows).floats()) * 4;
}

Result<BlockForwardTimes> MeasureBlockForwards(Device& device, kernels::Dtype dtype,
                                               const Model& model, int rows, int threads) {
  const ForwardShapes s(model, rows);
  DeviceBuffers buffers(device);
  STRATA_ASSIGN_OR_RETURN(void* mem, buffers.alloc(s.floats() * 4, "the kernels' timing buffers"));
  float* in = static_cast<float*>(mem);
  float* out = in + s.in_floats();
  float* w = out + s.out_floats();
  float* bias = w + s.w_floats();
  const KernelTable& k = device.kernels(dtype);
  const int n = s.n, C = s.C, V = s.V;
  auto transformer = [&] {
    for (const auto& [a, b] : s.linears) k.linear_forward(out, in, w, bias, n, a, b);
  };
  auto logits = [&] { k.linear_forward(out, in, w, nullptr, n, C, V); };
  std::unique_ptr<Stream> stream = device.create_stream("measure");
  tbb::task_arena arena(std::max(1, threads));
  // One launch per run, waited for: the device's time, with its kernels in the arena.
  auto timed = [&](const std::function<void()>& run) -> Result<double> {
    Status done;
    const double seconds = Seconds([&] {
      stream->launch([&] { arena.execute(run); });
      done = stream->synchronize();
    });
    STRATA_RETURN_IF_ERROR(done);
    return seconds;
  };
  stream->launch([&] { k.zero(in, long(s.floats())); });  // finite operands
  BlockForwardTimes t;
  STRATA_RETURN_IF_ERROR(timed(transformer).status());  // warm-up
  STRATA_ASSIGN_OR_RETURN(const double transformer_s, timed(transformer));
  STRATA_RETURN_IF_ERROR(timed(logits).status());
  STRATA_ASSIGN_OR_RETURN(const double logits_s, timed(logits));
  t.transformer = transformer_s * s.scale_rows;
  t.logits = logits_s * s.scale_rows * s.scale_vocab;
  return t;
}

std::vector<ShardSearchBlock> ShardSearchInputs(const ShardSearchSetting& s) {
  const ModelLayout& layout = *s.layout;
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
    if (b == 0) {  // the embedding: its heads' part of the tied tensor is all-reduced first
      const double tied =
          s.rates.all_reduce_s(double(layout.embedding().tensors[kTiedTensor].numel) * 4);
      x.replicated_comm_s += tied;
      x.sharded_comm_s += tied;
    } else if (b + 1 < n) {
      x.compute_s = per_step * s.forward.transformer;
    }
    // The logits are counted with the block whose tensor they multiply by.
    if (b == (s.head_ties_embedding ? 0 : n - 1)) x.compute_s = per_step * s.forward.logits;
  }
  return out;
}

}  // namespace strata::scheduler
