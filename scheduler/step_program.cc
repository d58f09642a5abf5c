#include "scheduler/step_program.h"

#include <algorithm>

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

StepProgram BuildStepProgram(int num_layers, int micro_batches, bool wait_for_norm) {
  STRATA_CHECK(num_layers >= 0 && micro_batches >= 1);
  StepProgram p;
  const int L = num_layers, head = L + 1;
  p.num_blocks = L + 2;
  p.micro_batches = micro_batches;
  p.wait_for_norm = wait_for_norm;
  auto param = [](int b) { return SlotUse{b, SlotRole::kParam}; };
  auto grad = [](int b) { return SlotUse{b, SlotRole::kGrad}; };
  for (int m = 0; m < micro_batches; ++m) {
    const bool last_mb = m == micro_batches - 1;
    Op op;
    op.micro_batch = m;
    op.kind = OpKind::kEmbedFwd;
    op.block = 0;
    op.uses = {param(0)};
    op.all_gather = {0};
    p.ops.push_back(op);
    for (int l = 0; l < L; ++l) {
      op = Op{};
      op.micro_batch = m;
      op.kind = OpKind::kBlockFwd;
      op.block = 1 + l;
      op.uses = {param(1 + l)};
      op.all_gather = {1 + l};
      p.ops.push_back(op);
    }
    op = Op{};
    op.micro_batch = m;
    op.kind = OpKind::kHeadFwd;
    op.block = head;
    op.uses = {param(head), param(0)};
    op.all_gather = {head};
    p.ops.push_back(op);
    op = Op{};
    op.micro_batch = m;
    op.kind = OpKind::kHeadBwd;
    op.block = head;
    op.uses = {param(head), param(0), grad(head), grad(0)};
    op.grads_started = {head, 0};
    op.grads_done = {head};
    if (last_mb) {
      op.grads_final = {head};
      op.reduce_scatter = {head};
    }
    p.ops.push_back(op);
    for (int l = L - 1; l >= 0; --l) {
      op = Op{};
      op.micro_batch = m;
      op.kind = OpKind::kBlockBwd;
      op.block = 1 + l;
      op.uses = {param(1 + l), grad(1 + l)};
      op.grads_started = {1 + l};
      op.grads_done = {1 + l};
      op.all_gather = {1 + l};
      if (last_mb) {
        op.grads_final = {1 + l};
        op.reduce_scatter = {1 + l};
      }
      p.ops.push_back(op);
    }
    op = Op{};
    op.micro_batch = m;
    op.kind = OpKind::kEmbedBwd;
    op.block = 0;
    op.uses = {grad(0)};
    op.grads_done = {0};
    if (last_mb) {
      op.grads_final = {0};
      op.reduce_scatter = {0};
    }
    p.ops.push_back(op);
  }
  if (wait_for_norm) {
    // Forward order: the next step's first op needs block 0 first.
    for (int b = 0; b < p.num_blocks; ++b) p.ops.back().updates.push_back(b);
  } else {
    for (Op& o : p.ops) o.updates = o.grads_final;
    // The embedding's gradient is final one op after block 1's, but the next step needs the
    // embedding first (its forward is the first op): update it first, then block 1, so that its
    // update and upload overlap block 1's gradient copy instead of following its update.
    if (p.num_blocks > 2) {
      p.ops[p.ops.size() - 2].updates.clear();
      p.ops.back().updates = {0, 1};
    }
  }
  return p;
}

}  // namespace strata::scheduler
