#include "scheduler/slice_gather.h"

#include <string>

#include "core/util/check.h"
#include "scheduler/transfers.h"

namespace strata::scheduler {

SliceGather::SliceGather(Device& device, const KernelTable& kernels, parallel::Comm& comm,
                         const SplitPlan& plan, std::pair<float*, float*> buffers,
                         Timeline* timeline)
    : device_(device),
      kernels_(kernels),
      comm_(comm),
      plan_(plan),
      buffers_{buffers.first, buffers.second},
      timeline_(timeline),
      stream_(device.create_stream("slices")) {}

SliceGather::~SliceGather() { stream_->synchronize().ignore_error(); }

void SliceGather::begin(int block, const float* slot, std::vector<std::pair<int, int>> order,
                        long step) {
  STRATA_CHECK(next_ == order_.size()) << "an op left slices of block " << block_ << " unused";
  block_ = block;
  slot_ = slot;
  step_ = step;
  order_ = std::move(order);
  ready_.assign(order_.size(), nullptr);
  next_ = 0;
  if (!order_.empty()) issue(0);
}

const float* SliceGather::next(int tensor, int slice) {
  STRATA_CHECK(next_ < order_.size() && order_[next_] == std::make_pair(tensor, slice))
      << "block " << block_ << " asked for slice " << slice << " of tensor " << tensor
      << " out of order";
  const size_t i = next_++;
  // Slice i+1 goes into the other buffer, which slice i-1 (computed by now) used.
  if (i + 1 < order_.size()) issue(i + 1);
  ready_[i]->synchronize();
  return buffers_[i % 2];
}

void SliceGather::issue(size_t i) {
  const auto [tensor, slice] = order_[i];
  float* buffer = buffers_[i % 2];
  kernels_.finish();  // the kernels that read this buffer's last slice are done (see Reuse)
  const std::vector<SlicePiece> pieces = plan_.slice_pieces(block_, tensor, slice);
  uint64_t bytes = 0;
  for (const SlicePiece& p : pieces) bytes += uint64_t(p.floats) * 4;
  auto enqueue = [&] {
    for (const SlicePiece& p : pieces) {  // this rank's own pieces first, from its slot
      if (p.root != comm_.rank()) continue;
      Status st = device_.copy_async(buffer + p.dest, slot_ + p.src, size_t(p.floats) * 4,
                                     CopyKind::kDeviceToDevice, *stream_);
      STRATA_CHECK(st.ok()) << st.to_string();  // pointers from this plan's own buffers
    }
    stream_->launch([this, buffer, pieces, label = "slice " + std::to_string(slice) +
                                                   " of tensor " + std::to_string(tensor) +
                                                   " of block " + std::to_string(block_)] {
      std::vector<parallel::CommWork> works;
      for (const SlicePiece& p : pieces) {
        works.push_back(comm_.broadcast(buffer + p.dest, size_t(p.floats) * 4, p.root));
      }
      for (const parallel::CommWork& w : works) {
        Status st = w.wait();
        std::lock_guard<std::mutex> lock(mu_);
        if (!st.ok() && error_.ok()) error_ = st.with_context("gathering " + label);
      }
    });
  };
  if (timeline_ != nullptr) {
    EnqueueTimed(*timeline_, *stream_, Queue::kComm,
                 "slice gather of block " + std::to_string(block_), bytes, step_, enqueue);
  } else {
    enqueue();
  }
  ready_[i] = RecordOn(device_, *stream_);
}

Status SliceGather::take_error() {
  Status st = stream_->synchronize();
  std::lock_guard<std::mutex> lock(mu_);
  if (st.ok()) st = error_;
  error_ = Status::Ok();
  return st;
}

}  // namespace strata::scheduler
