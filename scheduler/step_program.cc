#include "scheduler/step_program.h"

#include <algorithm>
#include <utility>

#include "core/util/check.h"

namespace strata::scheduler {

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbedFwd:
      return "embed_fwd";
    case OpKind::kBlockFwd:
      return "block_fwd";
    case OpKind::kHeadFwd:
      return "head_fwd";
    case OpKind::kHeadBwd:
      return "head_bwd";
    case OpKind::kBlockBwd:
      return "block_bwd";
    case OpKind::kEmbedBwd:
      return "embed_bwd";
  }
  return "?";
}

std::string Op::label() const {
  return std::string(OpKindName(kind)) + " " + std::to_string(block) + " mb" +
         std::to_string(micro_batch);
}

uint64_t StepProgram::next_use(int block, SlotRole role, size_t pos) const {
  const size_t n = ops.size();
  for (size_t d = 0; d < n; ++d) {
    const Op& op = ops[(pos + d) % n];
    for (const SlotUse& u : op.uses) {
      if (u.block == block && u.role == role) return d;
    }
  }
  return kNever;
}

int StepProgram::max_slots_per_op() const {
  size_t most = 0;
  for (const Op& op : ops) most = std::max(most, op.uses.size());
  return static_cast<int>(most);
}

namespace {

SlotUse Param(int block) { return SlotUse{block, SlotRole::kParam}; }
SlotUse Grad(int block) { return SlotUse{block, SlotRole::kGrad}; }

Op MakeOp(OpKind kind, int block, int micro_batch, std::vector<SlotUse> uses) {
  Op op;
  op.kind = kind;
  op.block = block;
  op.micro_batch = micro_batch;
  op.uses = std::move(uses);
  return op;
}

// After the last micro-batch's op that finishes `block`'s gradient, the gradient is final.
void MarkFinal(Op& op, int block) {
  op.grads_final = {block};
  op.reduce_scatter = {block};
}

// Micro-batch m's forward: embed_fwd, block_fwd 1..L, head_fwd.
void AppendForward(StepProgram& p, int m) {
  const int head = p.num_blocks - 1;
  Op op = MakeOp(OpKind::kEmbedFwd, 0, m, {Param(0)});
  op.all_gather = {0};
  p.ops.push_back(std::move(op));
  for (int b = 1; b < head; ++b) {
    op = MakeOp(OpKind::kBlockFwd, b, m, {Param(b)});
    op.all_gather = {b};
    p.ops.push_back(std::move(op));
  }
  op = MakeOp(OpKind::kHeadFwd, head, m, {Param(head), Param(0)});
  op.all_gather = {head};
  p.ops.push_back(std::move(op));
}

// Micro-batch m's backward: head_bwd (which starts the tied embedding's gradient), block_bwd
// L..1, embed_bwd (which finishes it).
void AppendBackward(StepProgram& p, int m) {
  const int head = p.num_blocks - 1;
  const bool last_mb = m == p.micro_batches - 1;
  Op op = MakeOp(OpKind::kHeadBwd, head, m, {Param(head), Param(0), Grad(head), Grad(0)});
  op.grads_started = {head, 0};
  op.grads_done = {head};
  if (last_mb) MarkFinal(op, head);
  p.ops.push_back(std::move(op));
  for (int b = head - 1; b >= 1; --b) {
    op = MakeOp(OpKind::kBlockBwd, b, m, {Param(b), Grad(b)});
    op.grads_started = {b};
    op.grads_done = {b};
    op.all_gather = {b};
    if (last_mb) MarkFinal(op, b);
    p.ops.push_back(std::move(op));
  }
  op = MakeOp(OpKind::kEmbedBwd, 0, m, {Grad(0)});
  op.grads_done = {0};
  if (last_mb) MarkFinal(op, 0);
  p.ops.push_back(std::move(op));
}

// Where each block's update may start.
void PlaceUpdates(StepProgram& p) {
  if (p.wait_for_norm) {
    // Forward order: the next step's first op needs block 0 first.
    for (int b = 0; b < p.num_blocks; ++b) p.ops.back().updates.push_back(b);
    return;
  }
  for (Op& o : p.ops) o.updates = o.grads_final;
  // The embedding's gradient is final one op after block 1's, but the next step needs the
  // embedding first (its forward is the first op): update it first, then block 1, so that its
  // update and upload overlap block 1's gradient copy instead of following its update.
  if (p.num_blocks > 2) {
    p.ops[p.ops.size() - 2].updates.clear();
    p.ops.back().updates = {0, 1};
  }
}

}  // namespace

StepProgram BuildStepProgram(int num_layers, int micro_batches, bool wait_for_norm) {
  STRATA_CHECK(num_layers >= 0 && micro_batches >= 1);
  StepProgram p;
  p.num_blocks = num_layers + 2;
  p.micro_batches = micro_batches;
  p.wait_for_norm = wait_for_norm;
  for (int m = 0; m < micro_batches; ++m) {
    AppendForward(p, m);
    AppendBackward(p, m);
  }
  PlaceUpdates(p);
  return p;
}

}  // namespace strata::scheduler
