// What a CUDA kernel-table entry launches onto: the stream, cuBLAS handle and error slot of the
// CUDA stream whose worker thread is calling it. Included only by .cu files (nvcc, C++17).
//
// Note [CUDA kernels on the stream's thread]
// The kernel table's entries have the CPU kernels' signatures (kernel_table.h): no stream
// argument. On the cuda device, Stream::launch runs its function on the stream's own host
// thread (cuda_stream.cu), once the work enqueued before it has completed, with that stream as
// the thread's current launch (like PyTorch's current stream, which is also per thread). An
// entry called there enqueues its kernels and cuBLAS calls on CurrentLaunch().stream and
// returns; the stream's later work is ordered after them by CUDA itself. Calling an entry on
// any other thread is a bug, and CurrentLaunch() fails a check saying so.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

namespace strata::cuda {

struct Launch {
  cudaStream_t stream = nullptr;
  // Bound to `stream`, its own workspace (deterministic results), default math: fp32 GEMMs
  // without TF32, so results stay comparable with the CPU kernels.
  cublasHandle_t blas = nullptr;
  // Records the first error of the stream (sticky: the stream's later work is skipped and its
  // synchronize returns it).
  void (*fail)(void* slot, const std::string& message) = nullptr;
  void* slot = nullptr;
  std::string stream_name;
};

// The launch of the stream whose worker runs the calling thread (Note [CUDA kernels on the
// stream's thread]); fails a check on any other thread.
const Launch& CurrentLaunch();

// Records a failed CUDA call of a kernel entry on the current stream; true when `err` is
// cudaSuccess. `what` names the entry and the call ("layernorm_forward: cudaMallocAsync").
bool CheckCuda(cudaError_t err, const char* what);
bool CheckBlas(cublasStatus_t status, const char* what);

// Device scratch for one entry's temporaries (a reduction's partial sums, an index), from
// CUDA's stream-ordered pool on the current stream and returned to it in stream order when the
// object goes out of scope. Outside the --gpu-mem budget: entries ask for O(rows + columns)
// bytes, except the bf16 GEMMs' operand copies (gemm.cuh), half the bytes of the fp32 operands
// of one GEMM, freed when it is enqueued. get() is nullptr when the allocation failed (the error
// is recorded).
class StreamScratch {
 public:
  StreamScratch(size_t bytes, const char* what);
  ~StreamScratch();
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// Blocks of kThreads threads covering n items, capped (kernels loop grid-stride).
inline constexpr int kThreads = 256;
inline unsigned BlocksFor(long n, int threads = kThreads) {
  const long blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

}  // namespace strata::cuda
