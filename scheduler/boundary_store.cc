#include "scheduler/boundary_store.h"

#include <cstdlib>
#include <string>

#include "core/util/check.h"

namespace strata::scheduler {

namespace {
constexpr size_t kAlignment = 4096;  // whole pages, as the device's pinned copies like them
}  // namespace

BoundaryStore::BoundaryStore(Device& device, int micro_batches, int boundaries,
                             int64_t residual_floats)
    : device_(device),
      micro_batches_(micro_batches),
      boundaries_(boundaries),
      residual_(residual_floats),
      count_(int64_t(micro_batches) * boundaries) {}

Result<std::unique_ptr<BoundaryStore>> BoundaryStore::Create(Device& device, int micro_batches,
                                                             int boundaries,
                                                             int64_t residual_floats) {
  STRATA_CHECK(micro_batches > 0 && boundaries > 0 && residual_floats > 0);
  std::unique_ptr<BoundaryStore> s(
      new BoundaryStore(device, micro_batches, boundaries, residual_floats));
  const size_t bytes = (s->bytes() + kAlignment - 1) / kAlignment * kAlignment;
  s->data_ = static_cast<float*>(std::aligned_alloc(kAlignment, bytes));
  if (s->data_ == nullptr) {
    return Status::ResourceExhausted("allocating " + std::to_string(bytes) +
                                     " bytes of host memory for layer-major's boundary "
                                     "activations failed; lower --host-mem or --batch");
  }
  STRATA_RETURN_IF_ERROR(device.register_host(s->data_, bytes));
  s->registered_ = true;
  return s;
}

BoundaryStore::~BoundaryStore() {
  if (registered_) device_.unregister_host(data_).ignore_error();
  std::free(data_);
}

float* BoundaryStore::at(int micro_batch, int boundary) const {
  STRATA_CHECK(micro_batch >= 0 && micro_batch < micro_batches_ && boundary >= 0 &&
               boundary < boundaries_)
      << "boundary " << boundary << " of micro-batch " << micro_batch;
  return data_ + (int64_t(micro_batch) * boundaries_ + boundary) * residual_;
}

}  // namespace strata::scheduler
