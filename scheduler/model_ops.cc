#include "scheduler/model_ops.h"

#include <algorithm>
#include <utility>

#include "core/util/check.h"
#include "scheduler/activations.h"
#include "scheduler/data_parallel.h"
#include "scheduler/grad_norm.h"

namespace strata::scheduler {

namespace {

// The slot of (block, role) among the op's uses; nullptr when it has none (an untied head's
// ops use no slot of the embedding).
float* SlotOf(const Op& op, const std::vector<float*>& slots, int block, SlotRole role) {
  for (size_t i = 0; i < op.uses.size(); ++i) {
    if (op.uses[i].block == block && op.uses[i].role == role) return slots[i];
  }
  return nullptr;
}

bool StartsGrad(const Op& op, size_t i) {
  return op.uses[i].role == SlotRole::kGrad &&
         std::find(op.grads_started.begin(), op.grads_started.end(), op.uses[i].block) !=
             op.grads_started.end();
}

}  // namespace

ModelOps::ModelOps(const ModelOpsOptions& o)
    : o_(o),
      model_(*o.model),
      layout_(*o.layout),
      n_layer_(o.model->shape().n_layer),
      device_(*o.device),
      k_(o.device->kernels(o.dtype)),
      buffers_(*o.device) {
  if (tensor_parallel()) {
    tp_group_ = {.rank = o.tp_comm->rank(),
                 .size = o.tp_comm->size(),
                 .all_reduce = [this](float* data, int64_t n) { tp_all_reduce(data, n); }};
  }
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    slot_floats_.push_back(o.shards ? o.shards->gathered_floats(b) : layout_.blocks[b].numel);
  }
}

Result<std::unique_ptr<ModelOps>> ModelOps::Create(const ModelOpsOptions& options) {
  STRATA_CHECK(options.model && options.layout && options.device && options.plan);
  STRATA_CHECK(options.split == nullptr || !options.split->any_split() ||
               options.model->splits_layers())
      << options.model->shape().arch << " has no split operators";
  STRATA_CHECK(options.micro_rows > 0 && options.batch % options.micro_rows == 0);
  std::unique_ptr<ModelOps> ops(new ModelOps(options));
  STRATA_RETURN_IF_ERROR(ops->allocate());
  return ops;
}

Status ModelOps::allocate() {
  const int B = o_.micro_rows, T = o_.seq;
  dloss_ = 1.0f / float(int64_t(o_.global_batch > 0 ? o_.global_batch : o_.batch) * T);
  block_sums_.assign(layout_.num_blocks(), 0.0);
  losses_.assign(o_.batch / o_.micro_rows, 0.0f);
  arena_ = std::make_unique<tbb::task_arena>(o_.threads);
  STRATA_ASSIGN_OR_RETURN(void* tokens, buffers_.alloc(o_.plan->tokens_bytes, "the step's tokens"));
  tokens_ = static_cast<int32_t*>(tokens);
  const int micro_batches = o_.batch / o_.micro_rows;
  const ActivationLayout layout =
      MakeActivationLayout(model_, B, T, o_.plan->recompute_layers, micro_batches, o_.plan->stage);
  STRATA_CHECK(layout.bytes() <= o_.plan->acts_bytes)
      << "the plan budgets " << o_.plan->acts_bytes << " bytes of activations, the layout needs "
      << layout.bytes();
  STRATA_ASSIGN_OR_RETURN(void* acts, buffers_.alloc(o_.plan->acts_bytes, "activations"));
  Activations carved =
      CarveActivations(layout, static_cast<float*>(acts), StepLayerOutputOf(model_, B, T));
  sets_ = std::move(carved.sets);
  select_set(0);
  work_acts_ = carved.work;
  head_acts_ = carved.head;
  scratch_ = carved.scratch;
  dres_ = carved.dres;
  if (data_parallel() && (!piped() || o_.pipe->first())) {
    STRATA_ASSIGN_OR_RETURN(
        void* part, buffers_.alloc(o_.plan->embedding_part_bytes, "the embedding's gradient part"));
    embedding_part_ = static_cast<float*>(part);
  }
  if (o_.split != nullptr && o_.split->any_split()) {
    STRATA_CHECK(o_.slice_comm != nullptr) << "split blocks need the slice Comm";
    const uint64_t bytes = uint64_t(o_.split->slice_buffer_floats()) * 4;
    STRATA_CHECK(2 * bytes <= o_.plan->slice_bytes);
    STRATA_ASSIGN_OR_RETURN(void* a, buffers_.alloc(bytes, "a slice buffer of split blocks"));
    STRATA_ASSIGN_OR_RETURN(void* b, buffers_.alloc(bytes, "a slice buffer of split blocks"));
    slices_ = std::make_unique<SliceGather>(
        device_, k_, *o_.slice_comm, *o_.split,
        std::make_pair(static_cast<float*>(a), static_cast<float*>(b)), o_.timeline);
  }
  if (o_.plan->order == MicroBatchOrder::kLayerMajor) {
    STRATA_CHECK(o_.plan->recompute_layers == n_layer_) << "layer-major recomputes every block";
    STRATA_CHECK(sets_.size() == 1) << "layer-major keeps one micro-batch's activations";
    boundaries_ =
        std::make_unique<BoundaryStore>(o_.lender, micro_batches, n_layer_, boundary_bytes());
  }
  return upload_constants();
}

// The model's read-only constants (Model::constants), copied up once on a stream of their own:
// host code never writes device memory.
Status ModelOps::upload_constants() {
  const std::vector<float> host = model_.constants(o_.seq);
  if (host.empty()) return Status::Ok();
  const uint64_t bytes = uint64_t(host.size()) * sizeof(float);
  STRATA_CHECK(bytes <= o_.plan->constants_bytes) << "the plan budgets " << o_.plan->constants_bytes
                                                  << " bytes of constants, the model has " << bytes;
  STRATA_ASSIGN_OR_RETURN(void* device, buffers_.alloc(bytes, "the model's constants"));
  std::unique_ptr<Stream> stream = device_.create_stream("constants");
  STRATA_RETURN_IF_ERROR(
      device_.copy_async(device, host.data(), bytes, CopyKind::kHostToDevice, *stream));
  STRATA_RETURN_IF_ERROR(stream->synchronize());
  constants_ = static_cast<const float*>(device);
  return Status::Ok();
}

size_t ModelOps::boundary_bytes() const {
  return BoundaryStore::BoundaryBytes(model_.shape().n_embd, o_.micro_rows, o_.seq);
}

Status ModelOps::load_boundary(const Op& op, int boundary, Stream& stream) {
  char* device = reinterpret_cast<char*>(const_cast<float*>(input_of(sets_[0], boundary)));
  for (const BoundaryStore::Piece& p : boundaries_->for_read(op.micro_batch, boundary)) {
    STRATA_RETURN_IF_ERROR(
        device_.copy_async(device + p.offset, p.host, p.bytes, CopyKind::kHostToDevice, stream));
  }
  for (void* frame : boundaries_->read_done(op.micro_batch, boundary)) {
    stream.launch([store = boundaries_.get(), frame] { store->give_back(frame); });
  }
  return Status::Ok();
}

Status ModelOps::keep_boundary(const Op& op, int boundary, Stream& stream) {
  const char* device = reinterpret_cast<const char*>(input_of(sets_[0], boundary));
  STRATA_ASSIGN_OR_RETURN(std::vector<BoundaryStore::Piece> pieces,
                          boundaries_->for_write(op.micro_batch, boundary));
  for (const BoundaryStore::Piece& p : pieces) {
    STRATA_RETURN_IF_ERROR(
        device_.copy_async(p.host, device + p.offset, p.bytes, CopyKind::kDeviceToHost, stream));
  }
  return Status::Ok();
}

// Layer-major (boundary_store.h): a block's forward and backward read their input boundary, the
// head its input; the head's backward runs right after its forward, which loaded it.
Status ModelOps::stage_in(const Op& op, Stream& stream) {
  if (!boundaries_) return Status::Ok();
  const int L = n_layer_;
  switch (op.kind) {
    case OpKind::kBlockFwd:
    case OpKind::kBlockBwd:
      return load_boundary(op, op.block - 1, stream);
    case OpKind::kHeadFwd:
      return load_boundary(op, L, stream);
    default:
      return Status::Ok();
  }
}

// Layer-major: the embedding's and each block's forward keep their output boundary.
Status ModelOps::stage_out(const Op& op, Stream& stream) {
  if (!boundaries_) return Status::Ok();
  switch (op.kind) {
    case OpKind::kEmbedFwd:
      return keep_boundary(op, 0, stream);
    case OpKind::kBlockFwd:
      return keep_boundary(op, op.block, stream);
    default:
      return Status::Ok();
  }
}

const float* ModelOps::input_of(const ActivationSet& set, int layer) const {
  return layer == first_layer() ? set.emb_out : set.outputs[layer - 1];
}

float* ModelOps::acts_for(int layer) const {
  return recomputed(layer) ? work_acts_ : cur_->layers[layer];
}

void ModelOps::layer_forward(int layer, const float* params, bool rebuild) {
  const OpShape s = op_shape();
  float* acts = acts_for(layer);
  model_.layer_forward(k_, s, layer, params, block_input(layer), acts);
  if (recomputed(layer) && !rebuild) {
    k_.copy(cur_->outputs[layer], model_.layer_output(s, acts),
            long(int64_t(s.B) * s.T * model_.shape().n_embd));
  }
}

uint64_t ModelOps::slot_bytes(int block, SlotRole role) const {
  if (role == SlotRole::kParam && split(block)) {
    return uint64_t(o_.split->param_slot_floats(block)) * 4;
  }
  return block_bytes(block);
}

Status ModelOps::take_error() {
  Status tp = std::exchange(ops_error_, Status::Ok());
  Status s = slices_ ? slices_->take_error() : Status::Ok();
  return s.ok() ? tp : s;
}

void ModelOps::check_resident(const Op& op, const std::vector<float*>& slots) const {
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotUse& u = op.uses[i];
    const uint64_t bytes = u.role == SlotRole::kParam && split(u.block)
                               ? slot_bytes(u.block, u.role)
                               : uint64_t(layout_.blocks[u.block].numel) * 4;
    STRATA_CHECK(device_.is_device_memory(slots[i], size_t(bytes)))
        << op.label() << ": slot " << i << " is not device memory";
  }
  STRATA_CHECK(device_.is_device_memory(cur_->emb_out, 4) && device_.is_device_memory(tokens_, 4));
}

void ModelOps::run(const Op& op, const std::vector<float*>& slots) {
  select_set(op.micro_batch);
  check_resident(op, slots);  // the sim device's honesty check
  if (o_.skip_kernels) {
    losses_[op.micro_batch] = 0.0f;
    for (int b : op.grads_final) block_sums_[b] = 0.0;
    return;
  }
  if (piped()) pipe_receive(op);
  arena_->execute([&] {
    if (op.micro_batch == 0) {
      for (size_t i = 0; i < op.uses.size(); ++i) {
        if (StartsGrad(op, i)) {
          // The whole slot: a sharded block's tail beyond its layout is reduce-scattered too.
          k_.zero(slots[i], long(slot_floats_[op.uses[i].block]));
        }
      }
    }
    if (op.kind == OpKind::kEmbedBwd && op.micro_batch == 0 && embedding_part_ != nullptr) {
      k_.zero(embedding_part_, long(slot_floats_[0]));
    }
    if (!(piped() && op.kind == OpKind::kEmbedBwd && pipe_tied(op, slots[0]))) compute(op, slots);
    for (int b : op.grads_final) {
      if (data_parallel()) break;  // summed over the ranks first (reduce_grad)
      for (size_t i = 0; i < op.uses.size(); ++i) {
        if (op.uses[i].block == b && op.uses[i].role == SlotRole::kGrad) {
          block_sums_[b] = grad_sum_of_squares(b, slots[i]);
        }
      }
    }
  });
  if (piped()) pipe_send(op);
}

// The op's forward or backward through the model. Slots follow the op's uses (step_program.cc):
// the head's ops use {head params, embedding params, head grad, embedding grad} (an untied head's
// {head params, head grad}: SlotOf finds the embedding's, none), a block's
// backward {params, grad}.
void ModelOps::compute(const Op& op, const std::vector<float*>& p) {
  if ((op.kind == OpKind::kBlockFwd || op.kind == OpKind::kBlockBwd) && split(op.block)) {
    return compute_split(op, p);
  }
  const KernelTable& k = k_;  // the compute runs on the device's kernels
  const OpShape s = op_shape();
  const int B = s.B, T = s.T, L = n_layer_;
  const int32_t* x = tokens_ + int64_t(op.micro_batch) * B * T;
  const int32_t* y = tokens_ + int64_t(o_.batch) * T + int64_t(op.micro_batch) * B * T;
  const float* head_in = block_input(L);
  const bool first = op.micro_batch == 0;
  switch (op.kind) {
    case OpKind::kEmbedFwd:
      model_.embedding_forward(k, s, p[0], x, cur_->emb_out);
      break;
    case OpKind::kBlockFwd:
      layer_forward(op.block - 1, p[0], /*rebuild=*/false);
      break;
    case OpKind::kHeadFwd:
      losses_[op.micro_batch] = model_.head_forward(k, s, p[0], SlotOf(op, p, 0, SlotRole::kParam),
                                                    head_in, y, head_acts_);
      break;
    case OpKind::kHeadBwd:
      model_.head_backward(k, s, p[0], SlotOf(op, p, L + 1, SlotRole::kGrad),
                           SlotOf(op, p, 0, SlotRole::kParam), SlotOf(op, p, 0, SlotRole::kGrad),
                           head_in, y, head_acts_, scratch_, dloss_, dres_[op.micro_batch], first);
      break;
    case OpKind::kBlockBwd: {
      const int l = op.block - 1;
      if (recomputed(l)) layer_forward(l, p[0], /*rebuild=*/true);
      model_.layer_backward(k, s, l, p[0], p[1], block_input(l), acts_for(l), scratch_,
                            dres_[op.micro_batch], first);
      break;
    }
    case OpKind::kEmbedBwd:
      // The tied tensor's first contribution is the head's (Note [Gradient contributions]);
      // under data parallelism the embedding's contributions are made apart (Note
      // [Data-parallel gradients]).
      model_.embedding_backward(k, s, embedding_part_ != nullptr ? embedding_part_ : p[0],
                                dres_[op.micro_batch], x, scratch_, first,
                                /*first_tied=*/embedding_part_ != nullptr && first);
      break;
  }
}

// A pipeline's tied embedding (Note [Stage programs] in step_program.h): the last stage's replica
// takes the first stage's final gradient, which the first stage sends once it is summed over the
// data-parallel ranks.
Status ModelOps::reduce_grad(int block, float* slot) {
  if (piped() && block == 0 && !o_.pipe->first()) return pipe_reduce_tied(slot);
  STRATA_RETURN_IF_ERROR(reduce_over_dp(block, slot));
  if (piped() && block == 0) return pipe_reduce_tied(slot);
  return Status::Ok();
}

Status ModelOps::reduce_over_dp(int block, float* slot) {
  if (!data_parallel()) return Status::Ok();
  // --movement-only still runs the collectives (they are movement), on whatever the slot holds.
  const BlockSpec& spec = layout_.blocks[block];
  parallel::Comm& comm = *o_.comm;
  k_.finish();  // the collectives read the slot that this launch's kernels may have written
  if (sharded(block)) {
    const ShardPlan& shards = *o_.shards;
    float* mine = slot + int64_t(comm.rank()) * shards.shard_floats(block);
    if (block == 0) {
      STRATA_RETURN_IF_ERROR(ReduceShardedEmbeddingGradient(
          comm, k_, layout_, slot, embedding_part_, mine, shards.shard_floats(0)));
    } else {
      STRATA_RETURN_IF_ERROR(
          comm.reduce_scatter_sum(slot, mine, size_t(shards.shard_floats(block))).wait());
    }
    const int64_t owned = shards.owned_end(block) - shards.owned_begin(block);
    STRATA_ASSIGN_OR_RETURN(
        block_sums_[block],
        ShardedGradSumOfSquares(comm, k_, mine, owned, shards.shard_floats(block)));
    if (o_.skip_kernels) block_sums_[block] = 0.0;
    return Status::Ok();
  }
  if (block == 0) {
    STRATA_RETURN_IF_ERROR(
        ReduceEmbeddingGradient(comm, k_, layout_, slot, embedding_part_, /*heads_summed=*/false));
  } else {
    STRATA_RETURN_IF_ERROR(comm.all_reduce_sum(slot, slot, size_t(spec.numel)).wait());
  }
  block_sums_[block] = o_.skip_kernels ? 0.0 : grad_sum_of_squares(block, slot);
  return Status::Ok();
}

// Each rank's shard is at its place in the slot (uploaded from its pages): the in-place all-gather
// fills the others'.
Status ModelOps::gather_params(int block, float* slot) {
  if (!sharded(block)) return Status::Ok();
  if (split(block)) return gather_split_params(block, slot);
  const size_t shard_bytes = size_t(o_.shards->shard_floats(block)) * 4;
  return o_.comm
      ->all_gather(reinterpret_cast<char*>(slot) + o_.comm->rank() * shard_bytes, slot, shard_bytes)
      .wait();
}

}  // namespace strata::scheduler
