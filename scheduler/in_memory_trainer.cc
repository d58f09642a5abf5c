#include "scheduler/in_memory_trainer.h"

#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "core/device/create_device.h"
#include "core/device/device.h"
#include "core/kernels/adamw.h"
#include "core/nn/model.h"
#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "scheduler/data_parallel.h"
#include "scheduler/export_dir.h"
#include "scheduler/grad_norm.h"
#include "scheduler/in_memory_budget.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

// One device allocation freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device* d, void* p) : device_(d), ptr_(p) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept : device_(o.device_), ptr_(o.ptr_) { o.ptr_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(device_, o.device_);
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) device_->free(ptr_);
  }
  float* f() const { return static_cast<float*>(ptr_); }
  int32_t* i() const { return static_cast<int32_t*>(ptr_); }

 private:
  Device* device_ = nullptr;
  void* ptr_ = nullptr;
};

class InMemoryTrainer final : public Trainer {
 public:
  InMemoryTrainer(TrainOptions o, std::unique_ptr<Model> model, int seq, TokenDataset data)
      : o_(std::move(o)),
        model_(std::move(model)),
        layout_(model_->layout()),
        seq_(seq),
        data_(std::move(data)) {}
  // Queued work may still use the buffers (a setup that failed halfway): let it finish before
  // the members free them.
  ~InMemoryTrainer() override {
    if (compute_ != nullptr) compute_->synchronize().ignore_error();
  }

  Status setup() {
    const int B = micro_rows(), T = seq_;
    const int64_t P = layout_.total_numel;
    SimDeviceOptions dopt;
    STRATA_ASSIGN_OR_RETURN(dopt.capacity_bytes, InMemoryDeviceBudget(o_, *model_, B, T));
    dopt.link_gbps = o_.sim_link_gbps;
    STRATA_ASSIGN_OR_RETURN(
        device_,
        CreateDevice({.kind = o_.device, .cuda_ordinal = scheduler::CudaOrdinalOf(o_.grid)}, dopt));
    compute_ = device_->create_stream("compute");

    auto alloc = [&](int64_t floats, DeviceBuffer* out) -> Status {
      STRATA_ASSIGN_OR_RETURN(void* p, device_->alloc(size_t(floats) * 4));
      *out = DeviceBuffer(device_.get(), p);
      return Status::Ok();
    };
    STRATA_RETURN_IF_ERROR(alloc(P, &params_));
    STRATA_RETURN_IF_ERROR(alloc(P, &grads_));
    STRATA_RETURN_IF_ERROR(alloc(P, &m_));
    STRATA_RETURN_IF_ERROR(alloc(P, &v_));
    // Every block keeps its activations: this trainer never recomputes.
    STRATA_RETURN_IF_ERROR(alloc(
        InMemoryActivationFloats(*model_, B, T, my_micro_batches().count), &acts_));
    STRATA_RETURN_IF_ERROR(alloc(2 * int64_t(o_.data.batch) * T, &tokens_));
    if (ranks() > 1) {
      STRATA_RETURN_IF_ERROR(alloc(layout_.embedding().numel, &embedding_part_));
    }
    compute_->launch([k = &kernels(), m = m_.f(), v = v_.f(), P] {
      k->zero(m, long(P));
      k->zero(v, long(P));
    });

    carve_activations();
    STRATA_RETURN_IF_ERROR(upload_constants(alloc));
    STRATA_RETURN_IF_ERROR(upload_initial_params());
    log_first_line();
    return Status::Ok();
  }

  // The run's first line, as the paged engine's (after any error, which comes first): the
  // micro-batch order, after the grid in a job of several ranks.
  void log_first_line() const {
    const std::string order = "micro-batch order: micro-batch-major (the in-memory engine)";
    if (ranks() == 1) {
      Logger("train")->info("{}", order);
      return;
    }
    const std::string per_tier = "every byte of state on the device, " +
                                 FormatBytes(uint64_t(layout_.total_numel) * 16) +
                                 " (params, gradients, moments)";
    Logger("train")->info(
        "{}",
        scheduler::GridLine("dp " + std::to_string(ranks()) + " x tp 1 x pp 1",
                            o_.grid.ranks->backend(), scheduler::ShardPlan::Replicated(layout_),
                            Mention(Option::kShard) + " " + o_.grid.shard, "1", per_tier, order));
  }

  const ModelShape& shape() const override { return model_->shape(); }
  int seq() const override { return seq_; }
  std::string data_name() const override { return data_.name(); }

  Status run(const std::function<void(const StepStats&)>& on_step) override {
    const int threads = o_.threads > 0 ? o_.threads : tbb::info::default_concurrency();
    tbb::task_arena arena(threads);
    const auto start = Clock::now();
    for (long step = 0; step < o_.steps; ++step) {
      const auto t0 = Clock::now();
      StepStats s;
      Status status;
      STRATA_RETURN_IF_ERROR(upload_tokens(step));
      compute_->launch([&] { arena.execute([&] { status = train_step(step, &s); }); });
      STRATA_RETURN_IF_ERROR(compute_->synchronize());
      STRATA_RETURN_IF_ERROR(status);
      if (step == 0 && !o_.outputs.export_grads_path.empty() && rank() == 0) {
        // The update reads the gradients but leaves them as they were: step 1's, unclipped.
        STRATA_ASSIGN_OR_RETURN(std::vector<float> grads, download(grads_));
        STRATA_RETURN_IF_ERROR(model_->export_weights(o_.outputs.export_grads_path, grads.data()));
      }
      const auto t1 = Clock::now();
      s.step = step + 1;
      s.step_s = std::chrono::duration<double>(t1 - t0).count();
      s.elapsed_s = std::chrono::duration<double>(t1 - start).count();
      s.tokens_per_s = double(o_.data.batch) * seq_ / s.step_s;
      s.device_peak_bytes = device_->stats().peak_bytes;
      on_step(s);
      // Note [Stopping after a step]: no --export; after the last step the run just finishes.
      if (StopRequested(o_.stop_signal) && step + 1 < o_.steps) return Status::Ok();
    }
    if (!o_.outputs.export_path.empty() && rank() == 0) {  // every rank holds the same weights
      STRATA_ASSIGN_OR_RETURN(std::vector<float> params, download(params_));
      STRATA_RETURN_IF_ERROR(scheduler::PrepareExportDir(o_.outputs));
      STRATA_RETURN_IF_ERROR(model_->export_weights(o_.outputs.export_path, params.data()));
      STRATA_RETURN_IF_ERROR(scheduler::WriteExportConfig(o_.outputs));
      Logger("train")->info("wrote weights to {}", o_.outputs.export_path);
    }
    return Status::Ok();
  }

 private:
  float* block(const DeviceBuffer& buf, int b) const { return buf.f() + layout_.block_offset[b]; }

  // The activation buffer (InMemoryActivationFloats) cut into its pieces.
  void carve_activations() {
    const int B = micro_rows(), T = seq_;
    FloatCarver carve(acts_.f());
    const int64_t residual = ResidualFloats(model_->shape(), B, T);
    emb_out_ = carve.take(residual);
    layer_acts_.clear();
    for (int l = 0; l < model_->shape().n_layer; ++l) {
      layer_acts_.push_back(carve.take(model_->layer_acts_floats(B, T)));
    }
    head_acts_ = carve.take(model_->head_acts_floats(B, T));
    scratch_ = carve.take(model_->scratch_floats(B, T));
    dres_.clear();
    for (int i = 0; i < my_micro_batches().count; ++i) dres_.push_back(carve.take(residual));
  }

  // The model's read-only device constants for this run's T (Model::constants), if any.
  template <typename Alloc>
  Status upload_constants(const Alloc& alloc) {
    constants_host_ = model_->constants(seq_);
    if (constants_host_.empty()) return Status::Ok();
    STRATA_RETURN_IF_ERROR(alloc(int64_t(constants_host_.size()), &constants_));
    return device_->copy_async(constants_.f(), constants_host_.data(), constants_host_.size() * 4,
                               CopyKind::kHostToDevice, *compute_);
  }

  OpShape op_shape() const {
    return {.B = micro_rows(), .T = seq_, .constants = constants_host_.empty() ? nullptr
                                                                              : constants_.f()};
  }

  // The first weights (--init's, or the seed's) are made on the host and copied up: host code
  // never writes device memory. Waits for the setup's work on the compute stream too.
  Status upload_initial_params() {
    std::vector<float> initial(size_t(layout_.total_numel), 0.0f);
    if (!o_.model.init_path.empty()) {
      STRATA_RETURN_IF_ERROR(model_->import_weights(o_.model.init_path, initial.data()));
    } else {
      for (int b = 0; b < layout_.num_blocks(); ++b) {
        InitBlockParams(layout_.blocks[b], o_.seed, initial.data() + layout_.block_offset[b]);
      }
    }
    STRATA_RETURN_IF_ERROR(device_->copy_async(params_.f(), initial.data(), initial.size() * 4,
                                               CopyKind::kHostToDevice, *compute_));
    return compute_->synchronize().with_context("setting up the device state");
  }

  // Batch `step`'s tokens and targets, made on the host and copied up on the compute stream,
  // before the step's launch (the previous step's synchronize freed tokens_host_).
  Status upload_tokens(long step) {
    const int64_t n = int64_t(o_.data.batch) * seq_;
    tokens_host_.resize(size_t(2 * n));
    data_.batch(step, o_.data.batch, seq_, tokens_host_.data(), tokens_host_.data() + n);
    return device_->copy_async(tokens_.i(), tokens_host_.data(), tokens_host_.size() * 4,
                               CopyKind::kHostToDevice, *compute_);
  }

  // A whole-model buffer (parameters or gradients) copied down to the host.
  Result<std::vector<float>> download(const DeviceBuffer& buf) {
    std::vector<float> host(size_t(layout_.total_numel));
    STRATA_RETURN_IF_ERROR(device_->copy_async(host.data(), buf.f(), host.size() * 4,
                                               CopyKind::kDeviceToHost, *compute_));
    STRATA_RETURN_IF_ERROR(compute_->synchronize());
    return host;
  }

  // Rows per micro-batch: --micro-batch, else one micro-batch per rank.
  int micro_rows() const {
    return o_.data.micro_batch > 0 ? o_.data.micro_batch : o_.data.batch / ranks();
  }

  int rank() const { return scheduler::RankOf(o_.grid); }
  int ranks() const { return scheduler::RanksOf(o_.grid); }
  scheduler::RankMicroBatches my_micro_batches() const {
    return scheduler::RanksMicroBatches(o_.data.batch / micro_rows(), rank(), ranks());
  }

  // One optimizer step on batch `step` (0-based): this rank's micro-batches (every one on a
  // single rank), the gradients summed over the ranks (Note [Data-parallel gradients]), the
  // update. Runs on the compute stream.
  Status train_step(long step, StepStats* s) {
    const int T = seq_, B = micro_rows();
    const scheduler::RankMicroBatches mine = my_micro_batches();
    const int32_t* xs = tokens_.i();
    const int32_t* ys = xs + int64_t(o_.data.batch) * T;
    kernels().zero(grads_.f(), long(layout_.total_numel));
    std::vector<float> losses;
    // Micro-batches add up into grads_ (Note [Gradient contributions]); the embedding's
    // backwards follow every micro-batch's (Note [Tied gradient order]).
    for (int i = 0; i < mine.count; ++i) {
      const int64_t first = int64_t(mine.first + i) * B * T;
      STRATA_ASSIGN_OR_RETURN(const float loss,
                              forward_backward(step, xs + first, ys + first, dres_[i], i == 0));
      losses.push_back(loss);
    }
    embedding_backwards(xs + int64_t(mine.first) * B * T, mine.count);
    if (ranks() > 1) {
      STRATA_RETURN_IF_ERROR(scheduler::ReduceReplicatedGradients(
          *o_.grid.ranks, kernels(), layout_, grads_.f(), embedding_part_.f()));
      STRATA_ASSIGN_OR_RETURN(losses, scheduler::GatherMicroBatchLosses(*o_.grid.ranks, losses));
    }
    double loss_sum = 0.0;  // in micro-batch order, whatever the ranks
    for (float loss : losses) loss_sum += loss;
    s->loss = static_cast<float>(loss_sum / double(losses.size()));
    update(step, s);
    return Status::Ok();
  }

  // The embedding backwards of this rank's `count` micro-batches (tokens from `x`). One rank: into
  // grads_, after the heads' contributions to the tied tensor. Several: into embedding_part_, from
  // zero, for ReduceReplicatedGradients (Note [Data-parallel gradients]).
  void embedding_backwards(const int32_t* x, int count) {
    const int T = seq_, B = micro_rows();
    const bool apart = ranks() > 1;
    float* into = apart ? embedding_part_.f() : block(grads_, 0);
    if (apart) kernels().zero(into, long(layout_.embedding().numel));
    for (int i = 0; i < count; ++i) {
      model_->embedding_backward(kernels(), op_shape(), into, dres_[i], x + int64_t(i) * B * T,
                                 scratch_, /*first=*/i == 0, /*first_tied=*/apart && i == 0);
    }
  }

  // Forward and backward of one micro-batch (tokens x, targets y) up to the embedding: returns
  // its loss; the gradients accumulate into grads_ (`first`: micro-batch 0, Note [Gradient
  // contributions]), the embedding's input gradient is left in `dres`. Every kernel runs
  // through the device's table.
  Result<float> forward_backward(long step, const int32_t* x, const int32_t* y, float* dres,
                                 bool first) {
    const KernelTable& k = kernels();
    const Model& m = *model_;
    const OpShape s = op_shape();
    const int L = m.shape().n_layer;
    const float dloss = 1.0f / float(int64_t(o_.data.batch) * seq_);
    // Forward: embedding, L layers, head.
    m.embedding_forward(k, s, block(params_, 0), x, emb_out_);
    const float* h = emb_out_;
    for (int l = 0; l < L; ++l) {
      m.layer_forward(k, s, l, block(params_, 1 + l), h, layer_acts_[l]);
      h = m.layer_output(s, layer_acts_[l]);
    }
    const float loss = m.head_forward(k, s, block(params_, L + 1), block(params_, 0), h, y,
                                      head_acts_);
    if (!std::isfinite(loss)) {
      return Status::Aborted("step " + std::to_string(step + 1) + ": loss is " +
                             std::to_string(loss) + "; lower " + Mention(Option::kLr) +
                             " or enable " + Mention(Option::kGradClip));
    }
    // Backward in reverse.
    m.head_backward(k, s, block(params_, L + 1), block(grads_, L + 1), block(params_, 0),
                    block(grads_, 0), h, y, head_acts_, scratch_, dloss, dres, first);
    for (int l = L - 1; l >= 0; --l) {
      const float* in = l == 0 ? emb_out_ : m.layer_output(s, layer_acts_[l - 1]);
      m.layer_backward(k, s, l, block(params_, 1 + l), block(grads_, 1 + l), in, layer_acts_[l],
                       scratch_, dres, first);
    }
    return loss;
  }

  // Clipping by global norm (torch.nn.utils.clip_grad_norm_), then AdamW per tensor through the
  // device's table. The norm is summed per block in the canonical order the Engine uses too.
  void update(long step, StepStats* s) {
    std::vector<double> block_sums(layout_.num_blocks());
    for (int b = 0; b < layout_.num_blocks(); ++b) {
      block_sums[b] = BlockGradSumOfSquares(kernels(), layout_.blocks[b], block(grads_, b));
    }
    s->grad_norm = GlobalGradNorm(block_sums);
    const float clip = o_.optimizer.grad_clip;
    const float coef = clip > 0 ? kernels::clip_coefficient(s->grad_norm, clip) : 1.0f;
    s->clipped = coef < 1.0f;
    s->lr = LearningRateAt(o_.optimizer, o_.steps, step);
    kernels::AdamWParams hp;
    hp.lr = s->lr;
    hp.beta1 = o_.optimizer.beta1;
    hp.beta2 = o_.optimizer.beta2;
    hp.eps = o_.optimizer.eps;
    hp.step = step + 1;
    const KernelTable& k = kernels();
    for (int b = 0; b < layout_.num_blocks(); ++b) {
      for (const auto& t : layout_.blocks[b].tensors) {
        hp.weight_decay = t.decay ? o_.optimizer.weight_decay : 0.0f;
        const int64_t off = layout_.block_offset[b] + t.offset;
        k.adamw_update(params_.f() + off, grads_.f() + off, m_.f() + off, v_.f() + off, t.numel,
                       hp, coef);
      }
    }
  }

  // The device's kernels at --dtype.
  const KernelTable& kernels() const { return device_->kernels(ComputeDtype(o_.dtype)); }

  TrainOptions o_;
  std::unique_ptr<Model> model_;
  const ModelLayout& layout_;  // model_'s
  int seq_;
  TokenDataset data_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> compute_;
  DeviceBuffer params_, grads_, m_, v_, acts_, tokens_;
  DeviceBuffer embedding_part_;  // dp: this rank's embedding contributions
  DeviceBuffer constants_;       // Model::constants, when the model has any
  std::vector<float> constants_host_;
  std::vector<int32_t> tokens_host_;  // the batch on its way to tokens_
  float* emb_out_ = nullptr;
  std::vector<float*> layer_acts_;  // each layer's saved activations (Model::layer_acts_floats)
  float* head_acts_ = nullptr;
  float* scratch_ = nullptr;  // the backward's (Model::scratch_floats)
  std::vector<float*> dres_;  // per micro-batch
};

}  // namespace

Result<std::unique_ptr<Trainer>> CreateInMemoryTrainer(const TrainOptions& options,
                                                       std::unique_ptr<Model> model, int seq,
                                                       TokenDataset data) {
  STRATA_RETURN_IF_ERROR(CheckInMemoryFitsMachine(options, *model, seq));
  auto trainer = std::make_unique<InMemoryTrainer>(options, std::move(model), seq, std::move(data));
  STRATA_RETURN_IF_ERROR(trainer->setup());
  return std::unique_ptr<Trainer>(std::move(trainer));
}

}  // namespace strata
