#include "core/kernels/embedding.h"

#include "core/kernels/partition.h"

namespace strata::kernels {
namespace {

// Rows (positions) per task in the forward and in dwpe (Note [Fixed partitions]).
constexpr long kRowsPerChunk = 32;
// Channels per task in dwte.
constexpr long kChannelsPerChunk = 64;

}  // namespace

void embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                       int T, int C) {
  detail::for_each_chunk(static_cast<long>(B) * T, kRowsPerChunk, [&](long r0, long r1) {
    for (long r = r0; r < r1; ++r) {
      const float* e = wte + static_cast<long>(tokens[r]) * C;
      const float* p = wpe + (r % T) * C;
      float* y = out + r * C;
      for (int c = 0; c < C; ++c) y[c] = e[c] + p[c];
    }
  });
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, int B,
                        int T, int C, int vocab_begin, int vocab_end) {
  // dwpe[t] += sum over b of dout[b, t], in order b = 0, 1, ...: each task owns whole rows t.
  if (dwpe != nullptr) {
    detail::for_each_chunk(T, kRowsPerChunk, [&](long t0, long t1) {
      for (long t = t0; t < t1; ++t) {
        float* dp = dwpe + t * C;
        for (int b = 0; b < B; ++b) {
          const float* dy = dout + (static_cast<long>(b) * T + t) * C;
          for (int c = 0; c < C; ++c) dp[c] += dy[c];
        }
      }
    });
  }
  if (vocab_begin >= vocab_end) return;
  // dwte is a scatter-add: several positions may hold the same token. Each task owns a fixed
  // block of channels of every dwte row and walks the positions in order (b, t), so every
  // element receives its additions in the same order whatever the thread count, and no two
  // tasks write the same element.
  const long rows = static_cast<long>(B) * T;
  detail::for_each_chunk(C, kChannelsPerChunk, [&](long c0, long c1) {
    for (long r = 0; r < rows; ++r) {
      const int32_t token = tokens[r];
      if (token < vocab_begin || token >= vocab_end) continue;
      float* dw = dwte + static_cast<long>(token - vocab_begin) * C;
      const float* dy = dout + r * C;
      for (long c = c0; c < c1; ++c) dw[c] += dy[c];
    }
  });
}

}  // namespace strata::kernels
