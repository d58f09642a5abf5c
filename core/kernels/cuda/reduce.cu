#include "core/kernels/cuda/reduce.cuh"

namespace strata::kernels::cuda {
namespace {

// partial[chunk * cols + c] = sum of rows [chunk * kColumnChunkRows, ...) of column c, in row
// order. One thread per (column, chunk): neighbouring threads read neighbouring columns.
// Chunks are blockIdx.y, grid-stride (gridDim.y is capped at 65535).
__global__ void ColumnChunkSums(float* partial, const float* in, long rows, long chunks, int cols,
                                long ld) {
  const long c = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  for (long chunk = blockIdx.y; chunk < chunks; chunk += gridDim.y) {
    const long r0 = chunk * kColumnChunkRows;
    const long r1 = r0 + kColumnChunkRows < rows ? r0 + kColumnChunkRows : rows;
    float sum = 0.0f;
    for (long r = r0; r < r1; ++r) sum += in[r * ld + c];
    partial[chunk * cols + c] = sum;
  }
}

// out[c] += the chunks' sums of column c, in chunk order.
__global__ void AddChunkSums(float* out, const float* partial, long chunks, int cols) {
  const long c = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum = 0.0f;
  for (long k = 0; k < chunks; ++k) sum += partial[k * cols + c];
  out[c] += sum;
}

}  // namespace

void ColumnSumsAccumulate(float* out, const float* in, long rows, int cols, long ld,
                          const char* what) {
  if (rows <= 0 || cols <= 0) return;
  const ::strata::cuda::Launch& l = ::strata::cuda::CurrentLaunch();
  const long chunks = (rows + kColumnChunkRows - 1) / kColumnChunkRows;
  ::strata::cuda::StreamScratch partial(sizeof(float) * chunks * cols, what);
  if (partial.get() == nullptr) return;
  const unsigned col_blocks = static_cast<unsigned>((cols + 127) / 128);
  const unsigned chunk_blocks = static_cast<unsigned>(chunks < 65535 ? chunks : 65535);
  ColumnChunkSums<<<dim3(col_blocks, chunk_blocks), 128, 0, l.stream>>>(partial.as<float>(), in,
                                                                        rows, chunks, cols, ld);
  AddChunkSums<<<col_blocks, 128, 0, l.stream>>>(out, partial.as<float>(), chunks, cols);
  ::strata::cuda::CheckCuda(cudaGetLastError(), what);
}

}  // namespace strata::kernels::cuda
