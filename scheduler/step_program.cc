#include "scheduler/step_program.h"

#include <algorithm>
#include <utility>

#include "core/util/check.h"
#include "scheduler/pipeline_plan.h"

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

const char* MicroBatchOrderName(MicroBatchOrder order) {
  return order == MicroBatchOrder::kLayerMajor ? "layer-major" : "micro-batch-major";
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

// The forward ops of micro-batch m: the embedding, blocks first..last, the head (head: L + 1).
Op EmbedFwd(int m) {
  Op op = MakeOp(OpKind::kEmbedFwd, 0, m, {Param(0)});
  op.all_gather = {0};
  return op;
}

Op BlockFwd(int b, int m, bool gather) {
  Op op = MakeOp(OpKind::kBlockFwd, b, m, {Param(b)});
  if (gather) op.all_gather = {b};
  return op;
}

Op HeadFwd(const StepProgram& p, int head, int m, bool gather) {
  Op op = MakeOp(OpKind::kHeadFwd, head, m,
                 p.tied_head ? std::vector<SlotUse>{Param(head), Param(0)}
                             : std::vector<SlotUse>{Param(head)});
  if (gather) op.all_gather = {head};
  return op;
}

// head_bwd of micro-batch m. It starts the head's gradient when `start` and, tied, the
// embedding's in micro-batch 0 (Note [Tied gradient order]: dwte stays on the device until the
// last embed_bwd); it finishes the head's gradient when `finish`.
Op HeadBwd(const StepProgram& p, int m, bool start, bool finish) {
  const int head = p.num_blocks - 1;
  Op op = MakeOp(OpKind::kHeadBwd, head, m,
                 p.tied_head ? std::vector<SlotUse>{Param(head), Param(0), Grad(head), Grad(0)}
                             : std::vector<SlotUse>{Param(head), Grad(head)});
  if (start) op.grads_started.push_back(head);
  if (m == 0 && p.tied_head) op.grads_started.push_back(0);
  if (finish) op.grads_done = {head};
  if (finish && m == p.micro_batches - 1) MarkFinal(op, head);
  return op;
}

Op BlockBwd(const StepProgram& p, int b, int m, bool start, bool finish) {
  Op op = MakeOp(OpKind::kBlockBwd, b, m, {Param(b), Grad(b)});
  if (start) op.grads_started = {b};
  if (finish) op.grads_done = {b};
  if (start) op.all_gather = {b};
  if (finish && m == p.micro_batches - 1) MarkFinal(op, b);
  return op;
}

// The embedding's backward of every micro-batch: the last one finishes the tied gradient; the
// first starts an untied head's embedding gradient.
void AppendEmbedBackwards(StepProgram& p) {
  for (int m = 0; m < p.micro_batches; ++m) {
    Op op = MakeOp(OpKind::kEmbedBwd, 0, m, {Grad(0)});
    if (m == 0 && !p.tied_head) op.grads_started = {0};
    if (m == p.micro_batches - 1) {
      op.grads_done = {0};
      MarkFinal(op, 0);
    }
    p.ops.push_back(std::move(op));
  }
}

// Micro-batch after micro-batch; every gradient but the tied one goes down after each.
void AppendMicroBatchMajor(StepProgram& p) {
  const int head = p.num_blocks - 1;
  for (int m = 0; m < p.micro_batches; ++m) {
    p.ops.push_back(EmbedFwd(m));
    for (int b = 1; b < head; ++b) p.ops.push_back(BlockFwd(b, m, true));
    p.ops.push_back(HeadFwd(p, head, m, true));
    p.ops.push_back(HeadBwd(p, m, true, true));
    for (int b = head - 1; b >= 1; --b) p.ops.push_back(BlockBwd(p, b, m, true, true));
  }
  AppendEmbedBackwards(p);
}

// Block after block, every micro-batch through each (Note [Micro-batch order]).
void AppendLayerMajor(StepProgram& p) {
  const int head = p.num_blocks - 1, last = p.micro_batches - 1;
  for (int m = 0; m < p.micro_batches; ++m) p.ops.push_back(EmbedFwd(m));
  for (int b = 1; b < head; ++b) {
    for (int m = 0; m < p.micro_batches; ++m) p.ops.push_back(BlockFwd(b, m, m == 0));
  }
  for (int m = 0; m < p.micro_batches; ++m) {
    p.ops.push_back(HeadFwd(p, head, m, m == 0));
    p.ops.push_back(HeadBwd(p, m, m == 0, m == last));
  }
  for (int b = head - 1; b >= 1; --b) {
    for (int m = 0; m < p.micro_batches; ++m) p.ops.push_back(BlockBwd(p, b, m, m == 0, m == last));
  }
  AppendEmbedBackwards(p);
}

// A stage's forward and backward of micro-batch m (Note [Stage programs]).
void AppendStageStep(StepProgram& p, const StageBlocks& s, const PipeStep& step) {
  const int head = p.num_blocks - 1, m = step.micro_batch;
  if (step.forward) {
    if (s.first) p.ops.push_back(EmbedFwd(m));
    for (int b = s.first_block; b <= s.last_block; ++b) p.ops.push_back(BlockFwd(b, m, true));
    if (s.last) p.ops.push_back(HeadFwd(p, head, m, true));
    if (s.last) p.ops.push_back(HeadBwd(p, m, true, true));
    return;
  }
  for (int b = s.last_block; b >= s.first_block; --b) p.ops.push_back(BlockBwd(p, b, m, true, true));
}

// Where each block's update may start.
void PlaceUpdates(StepProgram& p) {
  if (p.wait_for_norm) {
    // Forward order: the next step's first op needs block 0 first.
    for (int b = 0; b < p.num_blocks; ++b) p.ops.back().updates.push_back(b);
    return;
  }
  for (Op& o : p.ops) o.updates = o.grads_final;
  // The embedding's gradient is final M ops after block 1's (the embedding backwards), but the
  // next step needs the embedding first (its forward is the first op): update it first, then
  // block 1, so that its update and upload overlap block 1's gradient copy instead of following
  // its update.
  if (p.num_blocks > 2) {
    for (Op& o : p.ops) {
      if (o.grads_final == std::vector<int>{1}) o.updates.clear();
    }
    p.ops.back().updates = {0, 1};
  }
}

}  // namespace

StepProgram BuildStageProgram(int num_layers, int micro_batches, bool wait_for_norm,
                              const StageBlocks& stage, const std::vector<PipeStep>& steps) {
  STRATA_CHECK(num_layers >= 1 && micro_batches >= 1 && stage.first_block >= 1 &&
               stage.first_block <= stage.last_block && stage.last_block <= num_layers);
  StepProgram p;
  p.num_blocks = num_layers + 2;
  p.micro_batches = micro_batches;
  p.wait_for_norm = wait_for_norm;
  for (const PipeStep& step : steps) AppendStageStep(p, stage, step);
  if (stage.first) {
    const size_t first_embed_bwd = p.ops.size();
    AppendEmbedBackwards(p);
    // No head backward started wte's gradient here: the first embedding backward does (ModelOps
    // receives the head's fold into it).
    if (!stage.last) p.ops[first_embed_bwd].grads_started = {0};
  } else if (stage.last) {  // the replica's: nothing computed, the gradient final after it
    Op op = MakeOp(OpKind::kEmbedBwd, 0, micro_batches - 1, {Grad(0)});
    op.grads_done = {0};
    MarkFinal(op, 0);
    p.ops.push_back(std::move(op));
  }
  // The stage's blocks, in forward order (the next step's first op needs the first first).
  std::vector<int> held;
  if (stage.first || stage.last) held.push_back(0);
  for (int b = stage.first_block; b <= stage.last_block; ++b) held.push_back(b);
  if (stage.last) held.push_back(p.num_blocks - 1);
  if (wait_for_norm) {
    p.ops.back().updates = held;
  } else {
    for (Op& o : p.ops) o.updates = o.grads_final;
  }
  return p;
}

StepProgram BuildStepProgram(int num_layers, int micro_batches, bool wait_for_norm,
                             MicroBatchOrder order, bool tied_head) {
  STRATA_CHECK(num_layers >= 0 && micro_batches >= 1);
  StepProgram p;
  p.num_blocks = num_layers + 2;
  p.micro_batches = micro_batches;
  p.wait_for_norm = wait_for_norm;
  p.order = order;
  p.tied_head = tied_head;
  if (order == MicroBatchOrder::kLayerMajor) {
    AppendLayerMajor(p);
  } else {
    AppendMicroBatchMajor(p);
  }
  PlaceUpdates(p);
  return p;
}

}  // namespace strata::scheduler
