// ModelOps on a pipeline stage (pipe_stage.h, Note [Stage programs] in step_program.h): the
// activations and their gradients a stage receives before an op's kernels and sends after them,
// the tied embedding's gradient between the first and the last stage, and the step's loss and
// gradient norms gathered over the stages after its compute.
//
// Receives are posted ahead, as soon as their buffer is free, so that the transfer overlaps the
// ops before the one that needs it (which then waits only for what is left): a micro-batch's
// gradient into its own dres, all of them at the step's start; an activation into its set, once
// the micro-batch that last used the set has finished its backward here (Note [Stage
// activations]: set m mod K). Each link's Comm receives in micro-batch order, as its sender
// sends. Sends are queued on their Comm and awaited after the step's compute: the buffer a send
// reads is not written again before then (a set's output waits for the micro-batch's backward,
// which follows the neighbour's receive; each micro-batch has its own dres).
#include <chrono>
#include <string>

#include "core/util/check.h"
#include "scheduler/model_ops.h"

namespace strata::scheduler {

namespace {

size_t ResidualBytes(int micro_rows, int seq, int n_embd) {
  return size_t(micro_rows) * seq * n_embd * sizeof(float);
}

}  // namespace

void ModelOps::keep_error(const Status& s, const std::string& what) {
  if (s.ok() || !ops_error_.ok()) return;
  ops_error_ = s.with_context(what + " at step " + std::to_string(step_ + 1));
}

// Every receive whose buffer is free and that is not posted yet (see the header comment).
void ModelOps::pipe_post_receives() {
  const PipeStage& s = *o_.pipe;
  const int M = int(losses_.size()), K = int(sets_.size());
  const size_t bytes = ResidualBytes(o_.micro_rows, o_.seq, model_.shape().n_embd);
  PipeReceives& r = pipe_receives_;
  if (r.activations.empty()) {
    r.activations.assign(size_t(M), parallel::CommWork());
    r.gradients.assign(size_t(M), parallel::CommWork());
  }
  while (!s.last() && r.next_gradient < M) {
    const int m = r.next_gradient++;
    r.gradients[m] = s.bwd_in()->recv(dres_[m], bytes, s.stage + 1, m);
  }
  while (!s.first() && r.next_activation < M &&
         (r.next_activation < K || r.backwards_done > r.next_activation - K)) {
    const int m = r.next_activation++;
    r.activations[m] = s.fwd_in()->recv(sets_[m % K].emb_out, bytes, s.stage - 1, m);
  }
}

// Before the stage's first block's forward: its input from the previous stage; before its last
// block's backward: the gradient of its output from the next one. Both were posted ahead.
void ModelOps::pipe_receive(const Op& op) {
  const PipeStage& s = *o_.pipe;
  const int layer = op.block - 1, m = op.micro_batch;
  if (!ops_error_.ok()) return;
  pipe_post_receives();
  const parallel::CommWork* work = nullptr;
  int peer = 0;
  if (op.kind == OpKind::kBlockFwd && layer == s.first_layer() && !s.first()) {
    work = &pipe_receives_.activations[m], peer = s.stage - 1;
  } else if (op.kind == OpKind::kBlockBwd && layer == s.first_layer() + s.layers() - 1 &&
             !s.last()) {
    work = &pipe_receives_.gradients[m], peer = s.stage + 1;
  }
  if (work == nullptr) return;
  const auto t0 = std::chrono::steady_clock::now();
  keep_error(work->wait(),
             "receiving " + op.label() + "'s input from stage " + std::to_string(peer));
  compute_comm_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// After the stage's last block's forward: its output to the next stage; after its first block's
// backward: the gradient of its input to the previous one.
void ModelOps::pipe_send(const Op& op) {
  const PipeStage& s = *o_.pipe;
  const int layer = op.block - 1;
  const size_t bytes = ResidualBytes(o_.micro_rows, o_.seq, model_.shape().n_embd);
  if (!ops_error_.ok()) return;
  if (op.kind == OpKind::kBlockFwd && layer == s.first_layer() + s.layers() - 1 && !s.last()) {
    k_.finish();  // the send reads the forward's output
    pipe_sends_.push_back(
        s.fwd_out()->send(cur_->outputs[layer], bytes, s.stage + 1, op.micro_batch));
  } else if (op.kind == OpKind::kBlockBwd && layer == s.first_layer() && !s.first()) {
    k_.finish();  // the send reads the backward's output; the receives reuse what it read
    pipe_sends_.push_back(
        s.bwd_out()->send(dres_[op.micro_batch], bytes, s.stage - 1, op.micro_batch));
    ++pipe_receives_.backwards_done;  // its set is free: the next activation may come in
    pipe_post_receives();
  }
}

// The tied wte's gradient (Note [Tied gradient order]): the last stage's head backwards folded
// every micro-batch's contribution in its replica's slot; its closing op sends that fold, which
// the first stage's first embedding backward receives into its zeroed slot and continues, as one
// rank's embedding backwards continue the heads' fold.
bool ModelOps::pipe_tied(const Op& op, float* embedding_grad) {
  const PipeStage& s = *o_.pipe;
  const TensorSpec& wte = layout_.embedding().tensors[kTiedTensor];
  float* at = embedding_grad + wte.offset;
  const size_t bytes = size_t(wte.numel) * sizeof(float);
  if (!ops_error_.ok()) return !s.first();
  k_.finish();  // the heads' fold is sent, or the zeroed slot received into, after the kernels
  if (s.first()) {
    if (op.micro_batch == 0) {
      keep_error(s.tied->recv(at, bytes, s.stages - 1, 0).wait(),
                 "receiving the head's gradient of wte from the last stage");
    }
    return false;
  }
  keep_error(s.tied->send(at, bytes, 0, 0).wait(),
             "sending the head's gradient of wte to the first stage");
  return true;
}

// On the comm stream, once the embedding's gradient is final: the first stage sends what this
// rank holds of it (its shard when sharded) to the last stage's replica, which receives it.
Status ModelOps::pipe_reduce_tied(float* slot) {
  const PipeStage& s = *o_.pipe;
  float* mine = slot;
  int64_t floats = layout_.blocks[0].numel;
  if (sharded(0)) {
    floats = o_.shards->shard_floats(0);
    mine = slot + int64_t(o_.comm->rank()) * floats;
  }
  const size_t bytes = size_t(floats) * sizeof(float);
  k_.finish();  // after the embedding fold's kernels on this launch
  if (s.first()) {
    return s.tied->send(mine, bytes, s.stages - 1, 1)
        .wait()
        .with_context("sending the embedding's gradient to the last stage");
  }
  return s.tied->recv(mine, bytes, 0, 1)
      .wait()
      .with_context("receiving the embedding's gradient from the first stage");
}

// After the step's compute and its comm stream: every send done; each block's sum of squares
// from the stage that holds it (the replica's is the first stage's: 0 here), added over the
// stages where the others hold 0 (x + 0 = x: one rank's bits); every micro-batch's loss from the
// last stage.
Status ModelOps::pipe_finish() {
  const PipeStage& s = *o_.pipe;
  for (const parallel::CommWork& w : pipe_sends_) {
    STRATA_RETURN_IF_ERROR(w.wait().with_context("sending an activation to the next stage"));
  }
  pipe_sends_.clear();
  pipe_receives_ = PipeReceives{};  // every receive was awaited by its op
  // Only the stage's own blocks' sums are this step's (the others hold the last step's sum).
  for (int b = 0; b < int(block_sums_.size()); ++b) {
    const bool own = (b == 0 && s.first()) || (b == int(block_sums_.size()) - 1 && s.last()) ||
                     (b >= s.blocks.first_block && b <= s.blocks.last_block);
    if (!own) block_sums_[b] = 0.0;
  }
  STRATA_RETURN_IF_ERROR(
      s.tied->all_reduce_sum(block_sums_.data(), block_sums_.data(), block_sums_.size())
          .wait()
          .with_context("gathering the gradients' norms over the pipeline's stages"));
  return s.tied->broadcast(losses_.data(), losses_.size() * sizeof(float), s.stages - 1)
      .wait()
      .with_context("taking the losses from the last stage");
}

}  // namespace strata::scheduler
