#pragma once
// Rotary position embeddings in Hugging Face's rotate-half form (LlamaRotaryEmbedding and
// apply_rotary_pos_emb): for each head vector x of hs = 2 * half columns at position t,
//   y[i]        = x[i] * cos[t][i] - x[i + half] * sin[t][i]
//   y[i + half] = x[i + half] * cos[t][i] + x[i] * sin[t][i]          (i < half)
// i.e. q * cos + rotate_half(q) * sin with rotate_half([a, b]) = [-b, a] and cos, sin
// concatenated twice.
namespace strata::kernels {
// cos, sin (T, hs / 2): the angle t * inv_freq[i], inv_freq[i] = 1 / theta^(2i / hs), rounded as
// Hugging Face rounds them in fp32, then its cosine and sine correctly rounded. Computed on the
// host, once per run: both backends read the same table, so they rotate by the same bits.
void rope_table(float* cos, float* sin, int T, int hs, double theta);
// qkv (B, T, ld): rotates, in place, `heads` head vectors of hs columns at the start of each
// position's row (a packed [q | k | v] row: the NH query heads then the NKV key heads).
void rope_forward(float* qkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                  int hs);
// The gradient through the rotation, in place: dqkv's same columns go from d(rotated) to
// d(unrotated) (the rotation by -angle). An exception to the kernels' += rule, as the rotation is
// applied in place in forward: the caller accumulates the attention's gradient into dqkv first.
void rope_backward(float* dqkv, const float* cos, const float* sin, int B, int T, int ld, int heads,
                   int hs);
}  // namespace strata::kernels
