// A LLaMA decoder layer's tensors as one pointer each (llama_block.h computes with them,
// llama_layout.h finds them in a block's pages).
#pragma once

namespace strata::models {

// One pointer per tensor of a decoder layer, in Hugging Face's order.
struct LlamaBlockTensors {
  const float* input_norm;  // input_layernorm.weight (C)
  const float* q;           // self_attn.q_proj.weight (C, C)
  const float* k;           // self_attn.k_proj.weight (KV, C), KV = n_kv_head * head_dim
  const float* v;           // self_attn.v_proj.weight (KV, C)
  const float* o;           // self_attn.o_proj.weight (C, C)
  const float* post_norm;   // post_attention_layernorm.weight (C)
  const float* gate;        // mlp.gate_proj.weight (F, C)
  const float* up;          // mlp.up_proj.weight (F, C)
  const float* down;        // mlp.down_proj.weight (C, F)
};
// The same tensors' gradients.
struct LlamaBlockGrads {
  float *input_norm, *q, *k, *v, *o, *post_norm, *gate, *up, *down;
};

}  // namespace strata::models
