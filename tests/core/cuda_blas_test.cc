// cuBLAS loaded on first use (core/device/cuda_blas.h): the library is found and every function
// Strata calls resolves, with no GPU needed to load it. That the sim device never maps it is
// embedder_memory_test.cc's (tests/embed/), in a process of its own.
#include <gtest/gtest.h>

#ifdef STRATA_WITH_CUDA
#include <string>

#include "core/device/cuda_blas.h"

namespace strata::cuda {
namespace {

TEST(CudaBlas, LoadsEveryFunctionOnce) {
  const Result<const CublasApi*> api = LoadCublas();
  ASSERT_TRUE(api.ok()) << api.status().to_string();
  const CublasApi& table = **api;
#define STRATA_EXPECT_LOADED(name, type) EXPECT_NE(table.name, nullptr) << #name;
  STRATA_CUBLAS_FUNCTIONS(STRATA_EXPECT_LOADED)
#undef STRATA_EXPECT_LOADED
  // A call through the table reaches the library (this one needs no GPU).
  EXPECT_EQ(std::string(table.cublasGetStatusName(CUBLAS_STATUS_ALLOC_FAILED)),
            "CUBLAS_STATUS_ALLOC_FAILED");
  const Result<const CublasApi*> again = LoadCublas();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
  EXPECT_EQ(&Cublas(), *api);
}

}  // namespace
}  // namespace strata::cuda
#else
TEST(CudaBlas, LoadsEveryFunctionOnce) { GTEST_SKIP() << "built without CUDA: no cuBLAS to load"; }
#endif  // STRATA_WITH_CUDA
