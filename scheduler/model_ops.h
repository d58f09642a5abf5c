// ModelOps: BlockOps for any model behind the interface of core/nn/model.h (its embedding, its
// layers, its head). Owns the device buffers of the step's tokens, of the model's constants and
// of the activations (carved by the memory plan's activation layout: blocks the plan recomputes
// keep only their output and are rebuilt in backward in one shared set of activations; in
// layer-major order every block is recomputed and the boundaries of every micro-batch wait in a
// host BoundaryStore), and runs each op's forward or backward through the model on the device's
// kernels inside a TBB arena of `threads`. The parallel mechanics are its own, the same for every
// model: data-parallel reductions, shard gathers, pipeline sends and receives.
//
// Tensor parallelism runs the model's own tensor-parallel rank (Model::tensor_parallel_rank) in
// this rank's tp group (OpShape::tp, model_ops_tp.cc); split operators run the model's split ops
// with a split block's tensors gathered slice by slice (model_ops_split.cc).
//
// Honesty of the sim device: every op checks (STRATA_CHECK) that each buffer it touches lies
// inside a live device allocation before it runs.
#pragma once

#include <tbb/task_arena.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device/device.h"
#include "core/nn/model.h"
#include "core/util/status.h"
#include "parallel/comm.h"
#include "scheduler/activations.h"
#include "scheduler/block_ops.h"
#include "scheduler/boundary_store.h"
#include "scheduler/device_buffers.h"
#include "scheduler/memory_plan.h"
#include "scheduler/pipe_stage.h"
#include "scheduler/shard_plan.h"
#include "scheduler/slice_gather.h"
#include "scheduler/split_plan.h"
#include "scheduler/trace.h"

namespace strata::scheduler {

struct ModelOpsOptions {
  // The model this rank runs (under tp a tensor-parallel rank's: Model::tensor_parallel_rank)
  // and its blocks.
  const Model* model = nullptr;
  const ModelLayout* layout = nullptr;
  Device* device = nullptr;
  const MemoryPlan* plan = nullptr;  // acts_bytes, tokens_bytes, constants_bytes, recompute
  int batch = 1;                     // rows per step
  int micro_rows = 1;                // rows per micro-batch (divides batch)
  int seq = 1;
  int threads = 1;
  // --movement-only: ops run no kernels (losses and gradient sums read 0).
  bool skip_kernels = false;
  kernels::Dtype dtype = kernels::Dtype::kFp32;  // --dtype: which of the device's kernel tables
  // Layer-major: where the boundary store borrows its frames (Note [Boundaries in borrowed
  // frames] in boundary_store.h).
  FrameLender lender;
  // Data parallelism: the job's ranks (nullptr or one rank: none) and the rows of a step over
  // every rank (dloss = 1 / (global_batch * seq); 0: `batch`).
  parallel::Comm* comm = nullptr;
  int global_batch = 0;
  // Which blocks are sharded over the ranks (nullptr: none).
  const ShardPlan* shards = nullptr;
  // Which sharded blocks are split (Note [Split operators] in split_plan.h; nullptr: none), the
  // Comm their slices are gathered on (the job's second one) and the timeline those go to.
  const SplitPlan* split = nullptr;
  parallel::Comm* slice_comm = nullptr;
  Timeline* timeline = nullptr;
  // Tensor parallelism: `model` is a tensor-parallel rank's, whose ops all-reduce over `tp_comm`
  // (OpShape::tp). nullptr: none.
  parallel::Comm* tp_comm = nullptr;
  // Pipeline parallelism (pipe_stage.h): this rank's stage; nullptr: the whole model.
  const PipeStage* pipe = nullptr;
};

class ModelOps final : public BlockOps {
 public:
  // Allocates the tokens and the activations. ResourceExhausted when the device refuses.
  static Result<std::unique_ptr<ModelOps>> Create(const ModelOpsOptions& options);

  uint64_t block_bytes(int block) const override { return uint64_t(slot_floats_[block]) * 4; }
  uint64_t slot_bytes(int block, SlotRole role) const override;
  bool sharded(int block) const override { return o_.shards && o_.shards->sharded(block); }
  void set_step(long step) override { step_ = step; }
  Status take_error() override;
  int32_t* tokens() override { return tokens_; }
  uint64_t tokens_count() const override { return uint64_t(2) * o_.batch * o_.seq; }
  void run(const Op& op, const std::vector<float*>& slots) override;
  Status stage_in(const Op& op, Stream& stream) override;
  Status stage_out(const Op& op, Stream& stream) override;
  Status reduce_grad(int block, float* slot) override;
  Status gather_params(int block, float* slot) override;
  const std::vector<float>& losses() const override { return losses_; }
  const std::vector<double>& grad_sums() const override { return block_sums_; }
  Status finish_grad_sums() override;
  double take_compute_comm_s() override { return std::exchange(compute_comm_s_, 0.0); }

 private:
  explicit ModelOps(const ModelOpsOptions& o);
  Status allocate();
  void check_resident(const Op& op, const std::vector<float*>& slots) const;
  void compute(const Op& op, const std::vector<float*>& slots);
  // Tensor parallelism (model_ops_tp.cc): the model's ops run on this rank's slice in tp_group_,
  // and a block's sum of squares of its gradient is this rank's part (finish_grad_sums adds the
  // tp group's).
  bool tensor_parallel() const { return o_.tp_comm != nullptr && o_.tp_comm->size() > 1; }
  double grad_sum_of_squares(int block, const float* grads) const;
  void tp_all_reduce(float* data, int64_t count);
  // The stage's first layer (0 without a pipeline); a stage checkpoints its own first layers.
  int first_layer() const { return o_.pipe != nullptr ? o_.pipe->first_layer() : 0; }
  bool recomputed(int layer) const { return layer - first_layer() < o_.plan->recompute_layers; }
  // In the current op's activation set (Note [Stage activations] in activations.h): the compute
  // thread's alone (select_set). The driver's boundary copies (layer-major: one set) name theirs.
  const float* input_of(const ActivationSet& set, int layer) const;
  const float* block_input(int layer) const { return input_of(*cur_, layer); }
  // Where layer `layer`'s activations are: its own, or the rebuild buffer when recomputed.
  float* acts_for(int layer) const;
  OpShape op_shape() const {
    return {.B = o_.micro_rows,
            .T = o_.seq,
            .constants = constants_,
            .tp = tensor_parallel() ? &tp_group_ : nullptr};
  }
  // A layer's forward through the model; a recomputed layer's output is copied to its residual
  // buffer unless `rebuild` (its backward's recompute writes the same bits again).
  void layer_forward(int layer, const float* params, bool rebuild);
  void compute_split(const Op& op, const std::vector<float*>& slots);
  Status upload_constants();
  void select_set(int micro_batch) { cur_ = &sets_[size_t(micro_batch) % sets_.size()]; }
  // Pipeline parallelism (model_ops_pipe.cc): the op's input activation or gradient received from
  // the neighbouring stage before its kernels, its output sent after them; the tied embedding's
  // gradient between the first and the last stage (true: the op computes nothing more).
  bool piped() const { return o_.pipe != nullptr && o_.pipe->stages > 1; }
  void pipe_post_receives();
  void pipe_receive(const Op& op);
  void pipe_send(const Op& op);
  bool pipe_tied(const Op& op, float* embedding_grad);
  Status pipe_reduce_tied(float* slot);
  Status pipe_finish();
  Status reduce_over_dp(int block, float* slot);
  // The first failure of a collective an op ran itself (kept for take_error; later ones skip).
  void keep_error(const Status& s, const std::string& what);
  bool split(int block) const { return o_.split != nullptr && o_.split->split(block); }
  // A split block's weights in its parameter slot, its split tensors slice by slice (`order`: the
  // slices the op will ask for, begun on the slice gatherer; model_ops_split.cc).
  SplitWeights split_weights(const Op& op, const float* slot);
  Status gather_split_params(int block, float* slot);
  // Layer-major: boundary j of `op`'s micro-batch into the device (then gives back its frame when
  // that was its last read), or out to the store.
  Status load_boundary(const Op& op, int boundary, Stream& stream);
  Status keep_boundary(const Op& op, int boundary, Stream& stream);
  size_t boundary_bytes() const;

  const ModelOpsOptions o_;
  const Model& model_;
  const ModelLayout& layout_;
  const int n_layer_;
  Device& device_;
  const KernelTable& k_;  // the device's kernels at o_.dtype
  DeviceBuffers buffers_;
  std::unique_ptr<tbb::task_arena> arena_;
  float dloss_ = 0;

  int32_t* tokens_ = nullptr;
  const float* constants_ = nullptr;  // Model::constants on the device; nullptr when none
  // Per in-flight micro-batch (one without a pipeline): the stage's input and each layer's
  // output and activations; a recomputed layer's output is a residual buffer that the rebuild in
  // backward writes again (the same bits).
  std::vector<ActivationSet> sets_;
  const ActivationSet* cur_ = nullptr;  // the running op's (select_set)
  float* work_acts_ = nullptr;          // where recomputed layers run
  float* head_acts_ = nullptr;
  float* scratch_ = nullptr;
  std::vector<float*> dres_;                   // per micro-batch (Note [Tied gradient order])
  std::unique_ptr<BoundaryStore> boundaries_;  // layer-major only
  // Data parallelism: the embedding's own gradient contributions (Note [Data-parallel gradients]).
  float* embedding_part_ = nullptr;
  bool data_parallel() const { return o_.comm != nullptr && o_.comm->size() > 1; }
  std::vector<int64_t> slot_floats_;     // per block: a slot's floats (gathered when sharded)
  std::unique_ptr<SliceGather> slices_;  // split blocks only
  // Tensor parallelism: the group the model's ops run in (OpShape::tp; its all-reduce is
  // tp_all_reduce) and the first failed all-reduce of the step (take_error).
  TpGroup tp_group_;
  Status ops_error_;
  std::vector<parallel::CommWork> pipe_sends_;  // this step's, awaited in pipe_finish
  // This step's receives, posted ahead (model_ops_pipe.cc), per micro-batch.
  struct PipeReceives {
    std::vector<parallel::CommWork> activations, gradients;
    int next_activation = 0, next_gradient = 0;  // the next micro-batch to post
    int backwards_done = 0;  // micro-batches whose first layer's backward ran here
  };
  PipeReceives pipe_receives_;
  double compute_comm_s_ = 0;  // take_compute_comm_s
  long step_ = 0;

  // Written by ops, read after the step's compute completed.
  std::vector<double> block_sums_;
  std::vector<float> losses_;
};

}  // namespace strata::scheduler
