// CreateComm: names, option checks, and the backends this build or machine lacks.
#include "parallel/comm.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "core/device/device.h"
#include "core/util/option.h"
#include "tests/common/expect_fault.h"

namespace strata::parallel {
namespace {

TEST(CreateComm, BackendNames) {
  EXPECT_STREQ(CommBackendName(CommBackend::kLocal), "local");
  EXPECT_STREQ(CommBackendName(CommBackend::kMpi), "mpi");
  EXPECT_STREQ(CommBackendName(CommBackend::kNccl), "nccl");
}

TEST(CreateComm, TimeoutMustBePositiveAndFinite) {
  for (double timeout : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
    for (CommBackend backend : {CommBackend::kLocal, CommBackend::kMpi, CommBackend::kNccl}) {
      auto comm = CreateComm({.backend = backend, .timeout_s = timeout});
      EXPECT_EQ(comm.status().code(), StatusCode::kInvalidArgument)
          << CommBackendName(backend) << " " << timeout;
    }
  }
}

// Checked before MPI or NCCL is touched, so it runs without a launcher.
TEST(CreateComm, NcclWithoutAGpuIsNotSupported) {
  if (CudaDeviceCount() > 0) GTEST_SKIP() << "a GPU is present; this checks the no-GPU answer";
  auto comm = CreateComm({.backend = CommBackend::kNccl});
  EXPECT_EQ(comm.status().code(), StatusCode::kNotSupported) << comm.status().to_string();
  EXPECT_NE(comm.status().message().find("{comm} nccl needs a CUDA build and a GPU"),
            std::string::npos)
      << comm.status().message();
  test_support::ExpectFault(comm.status(), Option::kComm);
}

#ifndef STRATA_WITH_MPI
TEST(CreateComm, MpiWithoutMpiIsNotSupported) {
  EXPECT_EQ(CreateComm({.backend = CommBackend::kMpi}).status().code(), StatusCode::kNotSupported);
}
#endif

}  // namespace
}  // namespace strata::parallel
