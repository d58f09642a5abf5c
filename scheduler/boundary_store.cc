#include "scheduler/boundary_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/util/check.h"

namespace strata::scheduler {

namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Pieces per boundary, and pieces per frame.
std::pair<uint64_t, uint64_t> Cut(uint64_t boundary_bytes, uint64_t frame_bytes) {
  if (boundary_bytes <= frame_bytes) return {1, frame_bytes / boundary_bytes};
  return {CeilDiv(boundary_bytes, frame_bytes), 1};
}

}  // namespace

BoundaryStore::BoundaryStore(FrameLender lender, int micro_batches, int n_layer,
                             uint64_t boundary_bytes)
    : lender_(std::move(lender)),
      micro_batches_(micro_batches),
      n_layer_(n_layer),
      boundary_bytes_(boundary_bytes),
      pieces_(Cut(boundary_bytes, lender_.frame_bytes).first),
      piece_bytes_(pieces_ == 1 ? boundary_bytes : lender_.frame_bytes),
      per_frame_(Cut(boundary_bytes, lender_.frame_bytes).second) {
  STRATA_CHECK(micro_batches > 0 && n_layer >= 0 && boundary_bytes > 0 && per_frame_ > 0);
  const uint64_t frames = Frames(micro_batches, n_layer, boundary_bytes, lender_.frame_bytes);
  frames_.assign(frames, nullptr);
  reads_left_.assign(frames, 0);
}

BoundaryStore::~BoundaryStore() {
  for (char* f : frames_) {
    if (f != nullptr) lender_.give_back(f);
  }
}

uint64_t BoundaryStore::Frames(int micro_batches, int n_layer, uint64_t boundary_bytes,
                               uint64_t frame_bytes) {
  const auto [pieces, per_frame] = Cut(boundary_bytes, frame_bytes);
  return CeilDiv(uint64_t(micro_batches) * (n_layer + 1) * pieces, per_frame);
}

int BoundaryStore::slot(int m, int j) const {
  STRATA_CHECK(m >= 0 && m < micro_batches_ && j >= 0 && j <= n_layer_)
      << "boundary " << j << " of micro-batch " << m;
  return j * micro_batches_ + m;
}

int BoundaryStore::reads_per_step(int s) const {
  return s / micro_batches_ == n_layer_ ? 1 : 2;  // head_fwd; block_fwd and block_bwd
}

BoundaryStore::Piece BoundaryStore::piece(int s, int k) const {
  const uint64_t u = uint64_t(s) * pieces_ + k;
  char* frame = frames_[u / per_frame_];
  STRATA_CHECK(frame != nullptr) << "boundary slot " << s << " used without its frame";
  const uint64_t offset = k * piece_bytes_;
  return {frame + (u % per_frame_) * piece_bytes_, offset,
          std::min(piece_bytes_, boundary_bytes_ - offset)};
}

Result<std::vector<BoundaryStore::Piece>> BoundaryStore::for_write(int m, int j) {
  const int s = slot(m, j);
  std::vector<Piece> out;
  for (uint64_t k = 0; k < pieces_; ++k) {
    const uint64_t f = (uint64_t(s) * pieces_ + k) / per_frame_;
    if (frames_[f] == nullptr) {
      STRATA_ASSIGN_OR_RETURN(void* frame, lender_.borrow());
      frames_[f] = static_cast<char*>(frame);
      const uint64_t units = uint64_t(micro_batches_) * (n_layer_ + 1) * pieces_;
      reads_left_[f] = 0;
      for (uint64_t u = f * per_frame_; u < std::min(units, (f + 1) * per_frame_); ++u) {
        reads_left_[f] += reads_per_step(int(u / pieces_));
      }
    }
    out.push_back(piece(s, int(k)));
  }
  return out;
}

std::vector<BoundaryStore::Piece> BoundaryStore::for_read(int m, int j) const {
  const int s = slot(m, j);
  std::vector<Piece> out;
  for (uint64_t k = 0; k < pieces_; ++k) out.push_back(piece(s, int(k)));
  return out;
}

std::vector<void*> BoundaryStore::read_done(int m, int j) {
  const int s = slot(m, j);
  std::vector<void*> done;
  for (uint64_t k = 0; k < pieces_; ++k) {
    const uint64_t f = (uint64_t(s) * pieces_ + k) / per_frame_;
    STRATA_CHECK(frames_[f] != nullptr && reads_left_[f] > 0);
    if (--reads_left_[f] == 0) done.push_back(std::exchange(frames_[f], nullptr));
  }
  return done;
}

}  // namespace strata::scheduler
