// StepProgram: one training step as a static list of compute ops, what each needs on the device,
// and when each block's gradient is final and its optimizer update may start. Built once from the
// model's block count, the number of micro-batches and the clipping rule; the Engine
// (scheduler/engine.h) runs it once per step and uses its known future for Belady eviction of
// device slots.
//
// Two orders of the same ops (Note [Micro-batch order]); both end with the embedding's backwards
// of every micro-batch (Note [Tied gradient order] in activations.h):
//   micro-batch-major: for m = 0 .. M-1: embed_fwd, block_fwd 1..L, head_fwd, head_bwd,
//                      block_bwd L..1; then embed_bwd for m = 0 .. M-1
//   layer-major:       embed_fwd for every m; block_fwd b for every m, b = 1..L; head_fwd and
//                      head_bwd for every m; block_bwd b for every m, b = L..1; embed_bwd for
//                      every m
// The head is tied to the embedding: head_fwd / head_bwd read block 0's parameters and head_bwd
// starts block 0's gradient (dwte), which stays on the device until the last embed_bwd finishes
// it. A gradient slot is "started" by the first op that writes it in a stretch of ops (zeroed in
// micro-batch 0, loaded with the sum so far in later ones) and "done" by the last one (copied
// down to its host pages). Layer-major starts each gradient once and sends it down once.
//
// Note [Micro-batch order]
// Micro-batch-major holds one micro-batch's activations but loads every block's parameters once
// per micro-batch (forward and backward) and moves each block's running gradient down and up
// between micro-batches. Layer-major runs every micro-batch through a block while its parameters
// are on the device: parameters load twice per step (forward, backward) and gradients go down
// once, but the block-boundary activations of every micro-batch must wait for backward (every
// block is recomputed; ModelOps keeps the boundaries in host memory). The memory plan chooses by
// predicted traffic (memory_plan.h). The arithmetic of both orders is the same, op for op on
// each gradient, so their results are bit-identical.
//
// Collectives: at one rank they are no-ops, but the program names where they go: an all-gather
// of a block's sharded parameters before each use (Op::all_gather) and a reduce-scatter of its
// gradient when it is final (Op::reduce_scatter).
//
// Pure data; immutable after BuildStepProgram. Safe to share between threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::scheduler {

enum class OpKind : uint8_t { kEmbedFwd, kBlockFwd, kHeadFwd, kHeadBwd, kBlockBwd, kEmbedBwd };
const char* OpKindName(OpKind kind);

// What a compute op holds in a device slot: a block's parameters or its gradient.
enum class SlotRole : uint8_t { kParam = 0, kGrad = 1 };

struct SlotUse {
  int block = 0;
  SlotRole role = SlotRole::kParam;
};

struct Op {
  OpKind kind = OpKind::kEmbedFwd;
  int block = 0;  // the model block this op computes (0 embedding .. L+1 head)
  int micro_batch = 0;
  std::vector<SlotUse> uses;       // every slot the op touches (params read, grads +=)
  std::vector<int> grads_started;  // grad slots this op starts (zero or load, then +=)
  std::vector<int> grads_done;     // grad slots complete for this micro-batch after the op
  std::vector<int> grads_final;    // blocks whose step gradient is final after the op
  std::vector<int> updates;        // blocks whose optimizer update may start after the op
  std::vector<int> all_gather;     // collectives (no-ops at one rank)
  std::vector<int> reduce_scatter;
  std::string label() const;  // "fwd h.3 mb0", for traces and stall reports
};

enum class MicroBatchOrder : uint8_t { kMicroBatchMajor, kLayerMajor };
const char* MicroBatchOrderName(MicroBatchOrder order);  // "micro-batch-major", "layer-major"

struct StepProgram {
  int num_blocks = 0;  // L + 2
  int micro_batches = 1;
  MicroBatchOrder order = MicroBatchOrder::kMicroBatchMajor;
  bool wait_for_norm = true;  // clipping: updates start after the last op (norm known)
  // The head reads the embedding block's tied tensor (core/nn/model.h): its ops use block 0's
  // parameter and gradient slots, and its backward starts block 0's gradient. Untied, the
  // head's ops use its own block only and the first embedding backward starts block 0's.
  bool tied_head = true;
  std::vector<Op> ops;

  // Distance (in ops, counted cyclically over repeating steps) from position `pos` to the
  // next op at or after it that uses (block, role); kNever when no op uses it.
  static constexpr uint64_t kNever = ~uint64_t{0};
  uint64_t next_use(int block, SlotRole role, size_t pos) const;
  // Most slots any single op uses at once.
  int max_slots_per_op() const;
};

// A pipeline stage's part of the model (Note [Stage programs]): transformer blocks
// [first_block, last_block] (model block ids, 1-based), and whether it is the first stage (the
// embedding) and the last (the head, and the tied embedding's replica).
struct StageBlocks {
  int first_block = 1, last_block = 0;
  bool first = true, last = true;
};

// Note [Stage programs]
// A pipeline stage's step: its ops in the order of its schedule (scheduler/pipeline_plan.h), each
// forward F m the stage's forward ops of micro-batch m (the embedding's on the first stage, its
// blocks', and on the last the head's forward and backward: the head keeps one micro-batch's
// activations, and its backward needs nothing from later stages), each backward B m its blocks'
// backward ops in reverse, every gradient going down after each micro-batch as in
// micro-batch-major order. The first stage then runs the embedding's backwards (Note [Tied
// gradient order]); the last stage, which keeps a replica of the embedding for the tied head, ends
// with one embed_bwd op of its own (micro-batch M-1) that computes nothing: ModelOps sends the
// head's fold of wte's gradient to the first stage there, and the replica's gradient is final after
// it (ModelOps::reduce_grad receives the first stage's final one). Updates as BuildStepProgram's,
// over the stage's blocks.
struct PipeStep;
StepProgram BuildStageProgram(int num_layers, int micro_batches, bool wait_for_norm,
                              const StageBlocks& stage, const std::vector<PipeStep>& steps);

// num_layers >= 0, micro_batches >= 1. wait_for_norm: every update waits for the last op (the
// global norm needs every gradient); otherwise a block's update starts as soon as its gradient is
// final (during backward).
// `tied_head`: StepProgram::tied_head. (A pipeline's stage program keeps the tied form: its last
// stage holds the embedding's replica either way.)
StepProgram BuildStepProgram(int num_layers, int micro_batches, bool wait_for_norm,
                             MicroBatchOrder order = MicroBatchOrder::kMicroBatchMajor,
                             bool tied_head = true);

}  // namespace strata::scheduler
