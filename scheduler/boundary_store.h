// BoundaryStore: layer-major's host copy of every micro-batch's block-boundary activations
// (Note [Micro-batch order] in step_program.h). In layer-major order a block runs every
// micro-batch before the next block does, so the input of block l for micro-batch m must wait
// for backward (which rebuilds the block from it) while the other micro-batches pass through the
// same device buffers. The device keeps one micro-batch's boundaries (the activation layout of
// recompute-all); each op copies its input boundary in from here and its output out, on the
// compute stream, so the copies are ordered with the kernels without further Events.
//
// Boundary j of micro-batch m: j = 0 is the embedding's output, j = l + 1 transformer block l's
// output (the input of block l + 1, and the head's for j = L).
//
// Note [Boundaries in borrowed frames]
// The store's memory is frames borrowed from the host pool (MemoryManager::borrow_frame), so it
// is inside --host-mem and shares it with the pages: a frame is borrowed when forward first
// writes a boundary into it and given back once backward has read every boundary in it for the
// last time (block_fwd j+1 and block_bwd j+1 read boundary j; head_fwd reads boundary L). The
// boundaries are consumed during backward at the rate gradients appear, so the pool has the most
// frames where the step needs them most: a step's gradients wait for the clipping norm, and every
// one the pool holds is one NVMe write and read saved (80-layer scale run of the README: 30 MiB of
// boundaries in a 54 MiB pool). Slot s = j * M + m is cut into P = ceil(boundary / frame)
// pieces; piece u = s * P + k lies in frame u / per_frame (per_frame = frame / boundary when a
// boundary fits a frame, else 1), never across two.
//
// Threads: the driver calls for_write/for_read/read_done; give_back may run on a stream.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/util/status.h"

namespace strata::scheduler {

// Where the store's frames come from: the memory manager's pool.
struct FrameLender {
  std::function<Result<void*>()> borrow;
  std::function<void(void*)> give_back;
  uint64_t frame_bytes = 0;
};

class BoundaryStore {
 public:
  // `boundary_bytes`: one micro-batch's boundary (rows x seq x n_embd floats).
  BoundaryStore(FrameLender lender, int micro_batches, int n_layer, uint64_t boundary_bytes);
  ~BoundaryStore();  // gives back the frames still held
  BoundaryStore(const BoundaryStore&) = delete;
  BoundaryStore& operator=(const BoundaryStore&) = delete;

  // One micro-batch's boundary: rows x seq x n_embd floats (the plan and ModelOps both size it).
  static uint64_t BoundaryBytes(int n_embd, int micro_rows, int seq) {
    return uint64_t(micro_rows) * seq * n_embd * sizeof(float);
  }
  // Frames the whole store takes at its peak (what the memory plan reserves).
  static uint64_t Frames(int micro_batches, int n_layer, uint64_t boundary_bytes,
                         uint64_t frame_bytes);

  // A piece of a boundary: `bytes` at `offset` of the boundary live at `host`.
  struct Piece {
    char* host = nullptr;
    uint64_t offset = 0, bytes = 0;
  };
  // Where boundary j of micro-batch m is written; borrows frames first when needed.
  Result<std::vector<Piece>> for_write(int m, int j);
  std::vector<Piece> for_read(int m, int j) const;
  // Counts a read of (m, j): the frames to give back (once the read has run) whose boundaries
  // have all had their last read of this step.
  std::vector<void*> read_done(int m, int j);
  void give_back(void* frame) { lender_.give_back(frame); }

 private:
  int slot(int m, int j) const;
  int reads_per_step(int s) const;  // of slot s
  Piece piece(int s, int k) const;  // of a held frame

  const FrameLender lender_;
  const int micro_batches_, n_layer_;
  const uint64_t boundary_bytes_;
  const uint64_t pieces_;     // P, per boundary
  const uint64_t piece_bytes_;  // of every piece but maybe the last
  const uint64_t per_frame_;  // pieces per frame
  std::vector<char*> frames_;  // null: not held
  std::vector<int> reads_left_;  // per frame, this step
};

}  // namespace strata::scheduler
