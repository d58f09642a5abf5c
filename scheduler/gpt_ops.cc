#include "scheduler/gpt_ops.h"

#include <algorithm>
#include <utility>

#include "core/nn/tp_head.h"
#include "core/util/check.h"
#include "scheduler/activations.h"
#include "scheduler/data_parallel.h"
#include "scheduler/grad_norm.h"

namespace strata::scheduler {

namespace {

bool StartsGrad(const Op& op, size_t i) {
  return op.uses[i].role == SlotRole::kGrad &&
         std::find(op.grads_started.begin(), op.grads_started.end(), op.uses[i].block) !=
             op.grads_started.end();
}

}  // namespace

GptOps::GptOps(const GptOpsOptions& o)
    : o_(o),
      layout_(*o.layout),
      device_(*o.device),
      k_(o.device->kernels(o.dtype)),
      buffers_(*o.device) {
  for (int b = 0; b < layout_.num_blocks(); ++b) {
    slot_floats_.push_back(o.shards ? o.shards->gathered_floats(b) : layout_.blocks[b].numel);
  }
}

Result<std::unique_ptr<GptOps>> GptOps::Create(const GptOpsOptions& options) {
  STRATA_CHECK(options.layout && options.device && options.plan);
  STRATA_CHECK(options.micro_rows > 0 && options.batch % options.micro_rows == 0);
  std::unique_ptr<GptOps> ops(new GptOps(options));
  STRATA_RETURN_IF_ERROR(ops->allocate());
  return ops;
}

Status GptOps::allocate() {
  const GptConfig& c = layout_.config;
  const int B = o_.micro_rows, T = o_.seq;
  dloss_ = 1.0f / float(int64_t(o_.global_batch > 0 ? o_.global_batch : o_.batch) * T);
  block_sums_.assign(layout_.num_blocks(), 0.0);
  losses_.assign(o_.batch / o_.micro_rows, 0.0f);
  arena_ = std::make_unique<tbb::task_arena>(o_.threads);
  STRATA_ASSIGN_OR_RETURN(void* tokens, buffers_.alloc(o_.plan->tokens_bytes, "the step's tokens"));
  tokens_ = static_cast<int32_t*>(tokens);
  const int micro_batches = o_.batch / o_.micro_rows;
  const ActivationLayout layout =
      MakeActivationLayout(c, B, T, o_.plan->recompute_layers, micro_batches, o_.plan->stage);
  STRATA_CHECK(layout.bytes() <= o_.plan->acts_bytes)
      << "the plan budgets " << o_.plan->acts_bytes << " bytes of activations, the layout needs "
      << layout.bytes();
  STRATA_ASSIGN_OR_RETURN(void* acts, buffers_.alloc(o_.plan->acts_bytes, "activations"));
  Activations carved = CarveActivations(layout, static_cast<float*>(acts));
  sets_ = std::move(carved.sets);
  select_set(0);
  work_acts_ = carved.work;
  head_acts_ = carved.head;
  scratch_ = carved.scratch;
  dres_ = carved.dres;
  if (data_parallel() && (!piped() || o_.pipe->first())) {
    STRATA_ASSIGN_OR_RETURN(void* part, buffers_.alloc(o_.plan->embedding_part_bytes,
                                                       "the embedding's gradient part"));
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
  if (tensor_parallel()) {
    const uint64_t bytes = uint64_t(TpHeadStatsFloats(B, T, o_.tp_comm->size())) * 4;
    STRATA_CHECK(bytes <= o_.plan->tp_stats_bytes);
    STRATA_ASSIGN_OR_RETURN(void* stats, buffers_.alloc(bytes, "the head's vocab-parallel stats"));
    tp_stats_ = static_cast<float*>(stats);
  }
  if (o_.plan->order == MicroBatchOrder::kLayerMajor) {
    STRATA_CHECK(o_.plan->recompute_layers == c.n_layer) << "layer-major recomputes every block";
    STRATA_CHECK(sets_.size() == 1) << "layer-major keeps one micro-batch's activations";
    boundaries_ =
        std::make_unique<BoundaryStore>(o_.lender, micro_batches, c.n_layer, boundary_bytes());
  }
  return Status::Ok();
}

size_t GptOps::boundary_bytes() const {
  return BoundaryStore::BoundaryBytes(layout_.config.n_embd, o_.micro_rows, o_.seq);
}

Status GptOps::load_boundary(const Op& op, int boundary, Stream& stream) {
  char* device = reinterpret_cast<char*>(const_cast<float*>(input_of(sets_[0], boundary)));
  for (const BoundaryStore::Piece& p : boundaries_->for_read(op.micro_batch, boundary)) {
    STRATA_RETURN_IF_ERROR(device_.copy_async(device + p.offset, p.host, p.bytes,
                                              CopyKind::kHostToDevice, stream));
  }
  for (void* frame : boundaries_->read_done(op.micro_batch, boundary)) {
    stream.launch([store = boundaries_.get(), frame] { store->give_back(frame); });
  }
  return Status::Ok();
}

Status GptOps::keep_boundary(const Op& op, int boundary, Stream& stream) {
  const char* device = reinterpret_cast<const char*>(input_of(sets_[0], boundary));
  STRATA_ASSIGN_OR_RETURN(std::vector<BoundaryStore::Piece> pieces,
                          boundaries_->for_write(op.micro_batch, boundary));
  for (const BoundaryStore::Piece& p : pieces) {
    STRATA_RETURN_IF_ERROR(device_.copy_async(p.host, device + p.offset, p.bytes,
                                              CopyKind::kDeviceToHost, stream));
  }
  return Status::Ok();
}

// Layer-major (boundary_store.h): a block's forward and backward read their input boundary, the
// head its input; the head's backward runs right after its forward, which loaded it.
Status GptOps::stage_in(const Op& op, Stream& stream) {
  if (!boundaries_) return Status::Ok();
  const int L = layout_.config.n_layer;
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
Status GptOps::stage_out(const Op& op, Stream& stream) {
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

const float* GptOps::input_of(const ActivationSet& set, int layer) const {
  return layer == first_layer() ? set.emb_out : set.outputs[layer - 1];
}

const TransformerActs& GptOps::acts_for(int layer) {
  if (!recomputed(layer)) return cur_->layers[layer];
  work_acts_.out = cur_->outputs[layer];
  return work_acts_;
}

uint64_t GptOps::slot_bytes(int block, SlotRole role) const {
  if (role == SlotRole::kParam && split(block)) {
    return uint64_t(o_.split->param_slot_floats(block)) * 4;
  }
  return block_bytes(block);
}

Status GptOps::take_error() {
  Status tp = std::exchange(ops_error_, Status::Ok());
  Status s = slices_ ? slices_->take_error() : Status::Ok();
  return s.ok() ? tp : s;
}

void GptOps::check_resident(const Op& op, const std::vector<float*>& slots) const {
  for (size_t i = 0; i < slots.size(); ++i) {
    const SlotUse& u = op.uses[i];
    const uint64_t bytes = u.role == SlotRole::kParam && split(u.block)
                               ? slot_bytes(u.block, u.role)
                               : uint64_t(layout_.blocks[u.block].numel) * 4;
    STRATA_CHECK(device_.is_device_memory(slots[i], size_t(bytes)))
        << op.label() << ": slot " << i << " is not device memory";
  }
  STRATA_CHECK(device_.is_device_memory(cur_->emb_out, 4) &&
               device_.is_device_memory(tokens_, 4));
}

void GptOps::run(const Op& op, const std::vector<float*>& slots) {
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

// The op's forward or backward. Slots follow the op's uses (step_program.cc): the head's ops
// use {head params, embedding params, head grad, embedding grad}, a block's backward {params,
// grad}.
void GptOps::compute(const Op& op, const std::vector<float*>& p) {
  if (tensor_parallel()) return compute_tp(op, p);
  const KernelTable& k = k_;  // the compute runs on the device's kernels
  const int B = o_.micro_rows, T = o_.seq, L = layout_.config.n_layer;
  const int32_t* x = tokens_ + int64_t(op.micro_batch) * B * T;
  const int32_t* y = tokens_ + int64_t(o_.batch) * T + int64_t(op.micro_batch) * B * T;
  const float* head_in = block_input(L);
  const int64_t wte = layout_.embedding().tensors[kWte].offset;
  switch (op.kind) {
    case OpKind::kEmbedFwd:
      EmbeddingForward(k, layout_, p[0], x, B, T, cur_->emb_out);
      break;
    case OpKind::kBlockFwd:
      TransformerForward(k, layout_, op.block - 1,
                         split(op.block) ? split_weights(op, p[0])
                                         : WholeTransformerWeights(layout_, op.block - 1, p[0]),
                         block_input(op.block - 1), B, T, acts_for(op.block - 1));
      break;
    case OpKind::kHeadFwd:
      losses_[op.micro_batch] =
          HeadForward(k, layout_, p[0], p[1] + wte, head_in, y, B, T, head_acts_);
      break;
    case OpKind::kHeadBwd:
      HeadBackward(k, layout_, p[0], p[2], p[1] + wte, p[3] + wte, head_in, y, B, T, head_acts_,
                   scratch_, dloss_, dres_[op.micro_batch], /*first=*/op.micro_batch == 0);
      break;
    case OpKind::kBlockBwd: {
      const int l = op.block - 1;
      const TransformerWeights w = split(op.block) ? split_weights(op, p[0])
                                                   : WholeTransformerWeights(layout_, l, p[0]);
      if (recomputed(l)) TransformerForward(k, layout_, l, w, block_input(l), B, T, acts_for(l));
      TransformerBackward(k, layout_, l, w, p[1], block_input(l), B, T, acts_for(l), scratch_,
                          dres_[op.micro_batch], /*first=*/op.micro_batch == 0);
      break;
    }
    case OpKind::kEmbedBwd:
      // wte's first contribution is the head's (Note [Gradient contributions]); under data
      // parallelism the embedding's contributions are made apart (Note [Data-parallel
      // gradients]).
      EmbeddingBackward(k, layout_, embedding_part_ != nullptr ? embedding_part_ : p[0],
                        dres_[op.micro_batch], x, B, T, scratch_,
                        /*first_wpe=*/op.micro_batch == 0,
                        /*first_wte=*/embedding_part_ != nullptr && op.micro_batch == 0);
      break;
  }
}

// A pipeline's tied embedding (Note [Stage programs] in step_program.h): the last stage's replica
// takes the first stage's final gradient, which the first stage sends once it is summed over the
// data-parallel ranks.
Status GptOps::reduce_grad(int block, float* slot) {
  if (piped() && block == 0 && !o_.pipe->first()) return pipe_reduce_tied(slot);
  STRATA_RETURN_IF_ERROR(reduce_over_dp(block, slot));
  if (piped() && block == 0) return pipe_reduce_tied(slot);
  return Status::Ok();
}

Status GptOps::reduce_over_dp(int block, float* slot) {
  if (!data_parallel()) return Status::Ok();
  // --movement-only still runs the collectives (they are movement), on whatever the slot holds.
  const BlockSpec& spec = layout_.blocks[block];
  parallel::Comm& comm = *o_.comm;
  k_.finish();  // the collectives read the slot that this launch's kernels may have written
  if (sharded(block)) {
    const ShardPlan& shards = *o_.shards;
    float* mine = slot + int64_t(comm.rank()) * shards.shard_floats(block);
    if (block == 0) {
      STRATA_RETURN_IF_ERROR(ReduceShardedEmbeddingGradient(comm, k_, layout_, slot,
                                                            embedding_part_, mine,
                                                            shards.shard_floats(0)));
    } else {
      STRATA_RETURN_IF_ERROR(
          comm.reduce_scatter_sum(slot, mine, size_t(shards.shard_floats(block))).wait());
    }
    const int64_t owned = shards.owned_end(block) - shards.owned_begin(block);
    STRATA_ASSIGN_OR_RETURN(block_sums_[block],
                            ShardedGradSumOfSquares(comm, k_, mine, owned,
                                                    shards.shard_floats(block)));
    if (o_.skip_kernels) block_sums_[block] = 0.0;
    return Status::Ok();
  }
  if (block == 0) {
    STRATA_RETURN_IF_ERROR(ReduceEmbeddingGradient(comm, k_, layout_, slot,
                                                   embedding_part_, /*heads_summed=*/false));
  } else {
    STRATA_RETURN_IF_ERROR(comm.all_reduce_sum(slot, slot, size_t(spec.numel)).wait());
  }
  block_sums_[block] = o_.skip_kernels ? 0.0 : grad_sum_of_squares(block, slot);
  return Status::Ok();
}

// Note [Split operators]: the rest of the block, not the MLP weights (the op gathers those slice
// by slice), its owners' pieces broadcast in rank order.
Status GptOps::gather_split_params(int block, float* slot) {
  std::vector<parallel::CommWork> works;
  for (int r = 0; r < o_.comm->size(); ++r) {
    const auto [begin, end] = o_.split->rest_range(block, r);
    if (begin < end) works.push_back(o_.comm->broadcast(slot + begin, size_t(end - begin) * 4, r));
  }
  for (const parallel::CommWork& w : works) STRATA_RETURN_IF_ERROR(w.wait());
  return Status::Ok();
}

TransformerWeights GptOps::split_weights(const Op& op, const float* slot) {
  const int b = op.block, slices = o_.split->factor(b);
  const BlockSpec& spec = layout_.blocks[b];
  TransformerWeights w;
  for (int t = 0; t < kTransformerTensors; ++t) {
    if (t == kFcW || t == kFcProjW) continue;  // kSplitTensors: given slice by slice
    w.tensor[t] = slot + o_.split->param_slot_offset(b, t, spec.tensors[t].offset);
  }
  // The order the kernels ask (gpt_blocks.h): forward c_fc then c_proj, backward the reverse.
  std::vector<std::pair<int, int>> order;
  auto add = [&](int tensor) {
    for (int s = 0; s < slices; ++s) order.emplace_back(tensor, s);
  };
  if (op.kind == OpKind::kBlockFwd || recomputed(b - 1)) {
    add(kFcW);
    add(kFcProjW);
  }
  if (op.kind == OpKind::kBlockBwd) {
    add(kFcProjW);
    add(kFcW);
  }
  w.slices = slices;
  SliceGather* gather = slices_.get();
  gather->begin(b, slot, std::move(order), step_);
  w.slice = [gather](int tensor, int s) { return gather->next(tensor, s); };
  return w;
}

// Each rank's shard is at its place in the slot (uploaded from its pages): the in-place all-gather
// fills the others'.
Status GptOps::gather_params(int block, float* slot) {
  if (!sharded(block)) return Status::Ok();
  if (split(block)) return gather_split_params(block, slot);
  const size_t shard_bytes = size_t(o_.shards->shard_floats(block)) * 4;
  return o_.comm->all_gather(reinterpret_cast<char*>(slot) + o_.comm->rank() * shard_bytes, slot,
                             shard_bytes)
      .wait();
}

}  // namespace strata::scheduler
