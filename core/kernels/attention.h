#pragma once
// Causal multi-head self-attention core (after the qkv projection, before c_proj).
namespace strata::kernels {
// qkv (B, T, 3C): per position [q | k | v], each C = NH * hs, head h at columns [h*hs, (h+1)*hs).
// out (B, T, C): per head softmax(q k^T / sqrt(hs) + causal mask) v.
// att (B, NH, T, T): saved softmax probabilities (entries above the diagonal are 0).
void attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH);
// dqkv (B, T, 3C) +=. datt (B, NH, T, T) is scratch the caller provides (contents ignored).
void attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                        const float* att, int B, int T, int C, int NH);
// The two above at --dtype bf16 (Note [bf16 compute] in dtype.h): the operands of each GEMM
// (q, k, v, att, dout, d(scores)) rounded to bf16 as it reads them, products summed in fp32;
// the softmax, its backward and the stored att stay fp32.
void attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C,
                            int NH);
void attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                             const float* att, int B, int T, int C, int NH);
// Grouped-query attention (LLaMA): NKV key/value heads, each serving NH / NKV query heads (NKV
// divides NH). qkv (B, T, C + 2 * NKV * hs), hs = C / NH: per position [q (NH heads) | k (NKV
// heads) | v (NKV heads)]; query head h reads key/value head h / (NH / NKV). out, att and datt as
// above. With NKV == NH this is the layout, and the bits, of attention_forward/backward.
void gqa_attention_forward(float* out, float* att, const float* qkv, int B, int T, int C, int NH,
                           int NKV);
void gqa_attention_backward(float* dqkv, float* datt, const float* dout, const float* qkv,
                            const float* att, int B, int T, int C, int NH, int NKV);
// The two above at --dtype bf16, as attention_*_bf16.
void gqa_attention_forward_bf16(float* out, float* att, const float* qkv, int B, int T, int C,
                                int NH, int NKV);
void gqa_attention_backward_bf16(float* dqkv, float* datt, const float* dout, const float* qkv,
                                 const float* att, int B, int T, int C, int NH, int NKV);
}  // namespace strata::kernels
