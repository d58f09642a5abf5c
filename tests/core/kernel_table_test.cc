// The kernel table of each backend: the sim device's is exactly the CPU kernels (complete, the
// same addresses, the same bits when run on device memory from a stream); the CUDA backend's is
// empty until the CUDA kernels are written, and complete()/missing() say so.
#include "core/device/kernel_table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/kernels/attention.h"
#include "core/kernels/crossentropy.h"
#include "core/kernels/embedding.h"
#include "core/kernels/gelu.h"
#include "core/kernels/layernorm.h"
#include "core/kernels/linear.h"
#include "core/kernels/matmul.h"
#include "core/kernels/nn_linear.h"
#include "core/kernels/residual.h"
#include "core/kernels/rmsnorm.h"
#include "core/kernels/rope.h"
#include "core/kernels/swiglu.h"
#include "core/kernels/vocab_parallel.h"
#include "tests/core/kernel_test_util.h"

namespace strata {
namespace {

using kernels::testing::random_vector;

std::unique_ptr<Device> MakeSimDevice() {
  auto device = CreateSimDevice({.capacity_bytes = 1 << 20});
  EXPECT_TRUE(device.ok()) << device.status().to_string();
  return std::move(device).value();
}

TEST(KernelTable, SimDeviceTableIsTheCpuKernels) {
  auto device = MakeSimDevice();
  const KernelTable& k = device->kernels();
  EXPECT_EQ(&k, &CpuKernelTable());
  EXPECT_TRUE(k.complete());
  EXPECT_EQ(k.missing(), "");
  EXPECT_EQ(k.sgemm, &kernels::sgemm);
  EXPECT_EQ(k.linear_forward, &kernels::linear_forward);
  EXPECT_EQ(k.linear_backward, &kernels::linear_backward);
  EXPECT_EQ(k.linear_forward_rows, &kernels::linear_forward_rows);
  EXPECT_EQ(k.linear_backward_rows, &kernels::linear_backward_rows);
  EXPECT_EQ(k.nn_linear_forward_rows, &kernels::nn_linear_forward_rows);
  EXPECT_EQ(k.nn_linear_backward_rows, &kernels::nn_linear_backward_rows);
  EXPECT_EQ(k.layernorm_forward, &kernels::layernorm_forward);
  EXPECT_EQ(k.layernorm_backward, &kernels::layernorm_backward);
  EXPECT_EQ(k.gelu_forward, &kernels::gelu_forward);
  EXPECT_EQ(k.gelu_backward, &kernels::gelu_backward);
  EXPECT_EQ(k.attention_forward, &kernels::attention_forward);
  EXPECT_EQ(k.attention_backward, &kernels::attention_backward);
  EXPECT_EQ(k.rmsnorm_forward, &kernels::rmsnorm_forward);
  EXPECT_EQ(k.rmsnorm_backward, &kernels::rmsnorm_backward);
  EXPECT_EQ(k.rope_forward, &kernels::rope_forward);
  EXPECT_EQ(k.rope_backward, &kernels::rope_backward);
  EXPECT_EQ(k.swiglu_forward, &kernels::swiglu_forward);
  EXPECT_EQ(k.swiglu_backward, &kernels::swiglu_backward);
  EXPECT_EQ(k.gqa_attention_forward, &kernels::gqa_attention_forward);
  EXPECT_EQ(k.gqa_attention_backward, &kernels::gqa_attention_backward);
  EXPECT_EQ(k.residual_forward, &kernels::residual_forward);
  EXPECT_EQ(k.residual_backward, &kernels::residual_backward);
  EXPECT_EQ(k.embedding_forward, &kernels::embedding_forward);
  EXPECT_EQ(k.embedding_backward, &kernels::embedding_backward);
  EXPECT_EQ(k.crossentropy_forward, &kernels::crossentropy_forward);
  EXPECT_EQ(k.crossentropy_backward, &kernels::crossentropy_backward);
  EXPECT_EQ(k.vocab_parallel_embedding_forward, &kernels::vocab_parallel_embedding_forward);
  EXPECT_EQ(k.vocab_parallel_logit_max, &kernels::vocab_parallel_logit_max);
  EXPECT_EQ(k.vocab_parallel_softmax_partial, &kernels::vocab_parallel_softmax_partial);
  EXPECT_EQ(k.vocab_parallel_crossentropy_forward,
            &kernels::vocab_parallel_crossentropy_forward);
  EXPECT_EQ(k.vocab_parallel_crossentropy_backward,
            &kernels::vocab_parallel_crossentropy_backward);
  EXPECT_EQ(k.adamw_update, &kernels::adamw_update);
}

TEST(KernelTable, MissingNamesTheNullEntriesInOrder) {
  KernelTable k = CpuKernelTable();
  k.gelu_backward = nullptr;
  k.adamw_update = nullptr;
  EXPECT_FALSE(k.complete());
  EXPECT_EQ(k.missing(), "gelu_backward, adamw_update");
  const std::string all = KernelTable{}.missing();
  EXPECT_EQ(all.rfind("sgemm, linear_forward, linear_backward, linear_forward_rows, "
                      "linear_backward_rows, nn_linear_forward_rows, nn_linear_backward_rows, "
                      "layernorm_forward, ",
                      0),
            0u)
      << all;
  EXPECT_NE(all.find("crossentropy_backward, vocab_parallel_embedding_forward, "
                     "vocab_parallel_logit_max, vocab_parallel_softmax_partial, "
                     "vocab_parallel_crossentropy_forward, vocab_parallel_crossentropy_backward, "
                     "adamw_update"),
            std::string::npos)
      << all;
}

// A build with CUDA has every CUDA kernel (core/kernels/cuda/); one without has none, and a
// cuda device cannot be created there anyway.
TEST(KernelTable, CudaTableIsCompleteInACudaBuild) {
#ifdef STRATA_WITH_CUDA
  EXPECT_TRUE(CudaKernelTable().complete()) << "missing " << CudaKernelTable().missing();
  const KernelTable& f = CudaKernelTable();
  const KernelTable& h = CudaBf16KernelTable();
  EXPECT_TRUE(h.complete()) << "missing " << h.missing();
  // bf16 swaps the GEMM entries (Note [bf16 compute]) and keeps every other one.
  EXPECT_NE(h.sgemm, f.sgemm);
  EXPECT_NE(h.linear_forward_rows, f.linear_forward_rows);
  EXPECT_NE(h.linear_backward_rows, f.linear_backward_rows);
  EXPECT_NE(h.nn_linear_forward_rows, f.nn_linear_forward_rows);
  EXPECT_NE(h.nn_linear_backward_rows, f.nn_linear_backward_rows);
  EXPECT_NE(h.attention_forward, f.attention_forward);
  EXPECT_NE(h.attention_backward, f.attention_backward);
  EXPECT_NE(h.gqa_attention_forward, f.gqa_attention_forward);
  EXPECT_NE(h.gqa_attention_backward, f.gqa_attention_backward);
  EXPECT_EQ(h.layernorm_forward, f.layernorm_forward);
  EXPECT_EQ(h.rmsnorm_forward, f.rmsnorm_forward);
  EXPECT_EQ(h.adamw_update, f.adamw_update);
#else
  EXPECT_EQ(CudaKernelTable().missing(), KernelTable{}.missing());
  EXPECT_EQ(CudaBf16KernelTable().missing(), KernelTable{}.missing());
#endif
}

TEST(KernelTable, SimDeviceGivesTheTableOfEachDtype) {
  auto device = MakeSimDevice();
  EXPECT_EQ(&device->kernels(kernels::Dtype::kFp32), &CpuKernelTable());
  EXPECT_EQ(&device->kernels(kernels::Dtype::kBf16), &CpuBf16KernelTable());
  EXPECT_EQ(&device->kernels(), &CpuKernelTable());
}

// Layernorm and GELU through the sim device's table, on device memory, from a stream's worker:
// the same bits as the CPU kernels called directly on host vectors.
TEST(KernelTable, OpsThroughTheTableGiveTheCpuKernelsBits) {
  constexpr int N = 6, C = 40;
  const std::vector<float> inp = random_vector(N * C, 1), w = random_vector(C, 2),
                           b = random_vector(C, 3);
  std::vector<float> want_ln(N * C), mean(N), rstd(N), want_gelu(N * C);
  kernels::layernorm_forward(want_ln.data(), mean.data(), rstd.data(), inp.data(), w.data(),
                             b.data(), N, C);
  kernels::gelu_forward(want_gelu.data(), want_ln.data(), N * C);

  auto device = MakeSimDevice();
  auto mem = device->alloc(sizeof(float) * (4 * N * C + 2 * C + 2 * N));
  ASSERT_TRUE(mem.ok()) << mem.status().to_string();
  float* d = static_cast<float*>(*mem);
  float *d_inp = d, *d_ln = d_inp + N * C, *d_gelu = d_ln + N * C, *d_w = d_gelu + N * C;
  float *d_b = d_w + C, *d_mean = d_b + C, *d_rstd = d_mean + N;
  auto stream = device->create_stream("compute");
  ASSERT_TRUE(
      device->copy_async(d_inp, inp.data(), N * C * 4, CopyKind::kHostToDevice, *stream).ok());
  ASSERT_TRUE(device->copy_async(d_w, w.data(), C * 4, CopyKind::kHostToDevice, *stream).ok());
  ASSERT_TRUE(device->copy_async(d_b, b.data(), C * 4, CopyKind::kHostToDevice, *stream).ok());
  const KernelTable& k = device->kernels();
  stream->launch([&] {
    k.layernorm_forward(d_ln, d_mean, d_rstd, d_inp, d_w, d_b, N, C);
    k.gelu_forward(d_gelu, d_ln, N * C);
  });
  std::vector<float> got_ln(N * C), got_gelu(N * C);
  ASSERT_TRUE(
      device->copy_async(got_ln.data(), d_ln, N * C * 4, CopyKind::kDeviceToHost, *stream).ok());
  ASSERT_TRUE(
      device->copy_async(got_gelu.data(), d_gelu, N * C * 4, CopyKind::kDeviceToHost, *stream)
          .ok());
  ASSERT_TRUE(stream->synchronize().ok());
  EXPECT_EQ(std::memcmp(got_ln.data(), want_ln.data(), N * C * 4), 0);
  EXPECT_EQ(std::memcmp(got_gelu.data(), want_gelu.data(), N * C * 4), 0);
  stream.reset();
  device->free(d);
}

}  // namespace
}  // namespace strata
