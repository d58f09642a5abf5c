// The NCCL backend on a GPU: a job of one process (MPI starts as a singleton to carry the unique
// id), its collectives on buffers of the cuda device, host buffers over MPI, and a split. A job of several NCCL ranks needs a GPU per
// rank. Without a GPU the test skips with the reason; GPU machines run it (docs/parallel.md).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "core/device/device.h"
#include "parallel/comm.h"

namespace strata::parallel {
namespace {

constexpr size_t kFloats = 1 << 16;

// Device buffer <-> host vector through pinned host memory, on one stream.
class DeviceFloats {
 public:
  DeviceFloats(Device& device, Stream& stream) : device_(device), stream_(stream) {
    auto p = device_.alloc(kFloats * sizeof(float));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    ptr_ = p.ok() ? static_cast<float*>(*p) : nullptr;
  }
  ~DeviceFloats() {
    if (ptr_ != nullptr) device_.free(ptr_);
  }
  float* get() const { return ptr_; }
  Status copy_in(std::vector<float>& host) {
    STRATA_RETURN_IF_ERROR(device_.copy_async(ptr_, host.data(), kFloats * sizeof(float),
                                              CopyKind::kHostToDevice, stream_));
    return stream_.synchronize();
  }
  Status copy_out(std::vector<float>& host) {
    STRATA_RETURN_IF_ERROR(device_.copy_async(host.data(), ptr_, kFloats * sizeof(float),
                                              CopyKind::kDeviceToHost, stream_));
    return stream_.synchronize();
  }

 private:
  Device& device_;
  Stream& stream_;
  float* ptr_ = nullptr;
};

TEST(NcclCommGpu, OneRankCollectivesOnDeviceBuffers) {
  if (CudaDeviceCount() == 0) {
    GTEST_SKIP() << "no CUDA GPU: the NCCL backend runs on GPU machines (this build or machine "
                    "has none)";
  }
  auto device = CreateCudaDevice(0, 64 << 20);
  ASSERT_TRUE(device.ok()) << device.status().to_string();
  auto comm = CreateComm({.backend = CommBackend::kNccl, .timeout_s = 60});
  ASSERT_TRUE(comm.ok()) << comm.status().to_string();
  ASSERT_EQ((*comm)->size(), 1) << "run it without mpirun: one GPU, one rank";
  std::unique_ptr<Stream> stream = (*device)->create_stream("nccl-test");
  std::vector<float> in(kFloats), out(kFloats, -1.0f);
  for (size_t i = 0; i < kFloats; ++i) in[i] = float(i) * 0.5f - 7.0f;
  ASSERT_TRUE((*device)->register_host(in.data(), kFloats * sizeof(float)).ok());
  ASSERT_TRUE((*device)->register_host(out.data(), kFloats * sizeof(float)).ok());
  DeviceFloats a(**device, *stream), b(**device, *stream);
  ASSERT_TRUE(a.copy_in(in).ok());
  // The fold over one rank is its own contribution; a gather of one rank is a copy.
  ASSERT_TRUE((*comm)->all_reduce_sum(a.get(), b.get(), kFloats).wait().ok());
  ASSERT_TRUE(b.copy_out(out).ok());
  EXPECT_EQ(0, std::memcmp(in.data(), out.data(), kFloats * sizeof(float)));
  std::fill(out.begin(), out.end(), -1.0f);
  ASSERT_TRUE(b.copy_in(out).ok());
  ASSERT_TRUE((*comm)->all_gather(a.get(), b.get(), kFloats * sizeof(float)).wait().ok());
  ASSERT_TRUE((*comm)->broadcast(b.get(), kFloats * sizeof(float), 0).wait().ok());
  ASSERT_TRUE(b.copy_out(out).ok());
  EXPECT_EQ(0, std::memcmp(in.data(), out.data(), kFloats * sizeof(float)));
  // Host buffers (pinned here, or not) go over the MPI bootstrap (routed_comm.h), in order
  // with the device ops around them.
  std::vector<double> sums = {1.5, -2.25, 3.0}, summed(3, 0.0);
  ASSERT_TRUE((*comm)->all_reduce_sum(sums.data(), summed.data(), 3).wait().ok());
  EXPECT_EQ(sums, summed);
  std::vector<float> pinned_copy(kFloats, -1.0f);
  ASSERT_TRUE((*comm)->all_gather(in.data(), out.data(), kFloats * sizeof(float)).wait().ok());
  ASSERT_TRUE((*comm)->all_gather(out.data(), pinned_copy.data(), kFloats * sizeof(float))
                  .wait()
                  .ok());
  EXPECT_EQ(in, pinned_copy);
  EXPECT_EQ((*comm)->all_gather(in.data(), b.get(), 4).wait().code(),
            StatusCode::kInvalidArgument);  // a host and a device buffer in one op
  EXPECT_TRUE((*comm)->barrier().ok());

  // A group of the one rank (ncclCommSplit, with its MPI bootstrap split): its own collectives
  // on device buffers, and host buffers over the group's MPI side. (In this test: MPI starts
  // once per process, so the process keeps one top-level Comm.)
  auto group = (*comm)->split(/*color=*/0, /*key=*/0);
  ASSERT_TRUE(group.ok()) << group.status().to_string();
  EXPECT_EQ((*group)->size(), 1);
  EXPECT_EQ((*group)->backend(), CommBackend::kNccl);
  EXPECT_EQ((*comm)->split(-1, 0).status().code(), StatusCode::kInvalidArgument);
  std::fill(out.begin(), out.end(), -1.0f);
  ASSERT_TRUE(b.copy_in(out).ok());
  ASSERT_TRUE((*group)->all_reduce_sum(a.get(), b.get(), kFloats).wait().ok());
  ASSERT_TRUE(b.copy_out(out).ok());
  EXPECT_EQ(0, std::memcmp(in.data(), out.data(), kFloats * sizeof(float)));
  std::fill(summed.begin(), summed.end(), 0.0);
  ASSERT_TRUE((*group)->all_reduce_sum(sums.data(), summed.data(), 3).wait().ok());
  EXPECT_EQ(sums, summed);
  EXPECT_TRUE((*group)->barrier().ok());
  ASSERT_TRUE((*device)->unregister_host(in.data()).ok());
  ASSERT_TRUE((*device)->unregister_host(out.data()).ok());
}

}  // namespace
}  // namespace strata::parallel
