// LLaMA weights in and out under Hugging Face's names (llama_layout.h), stored (out, in) as
// nn.Linear stores them:
// - import from a safetensors file or a Hugging Face model directory (core/io/hf_checkpoint.h),
//   tensor by tensor, BF16/F16 widened to fp32; a tied checkpoint's extra lm_head.weight and
//   tensors the model has no use for (rotary buffers) are ignored;
// - export as one safetensors file of F32 tensors with the shape in __metadata__.
#pragma once

#include <string>

#include "core/util/status.h"
#include "models/llama/llama_layout.h"

namespace strata::models {

// Fills `values` (layout.total_numel floats, padding zeroed). Errors, each at fault of `init` and
// naming the file: HfCheckpoint::Open's; Corruption for a tensor the model needs that is absent
// (named, with its shape) or of another shape (named, both shapes).
Status ImportLlamaWeights(const std::string& path, const LlamaLayout& layout, float* values);

// Writes every tensor of the layout (`values` as above) to `path`; errors at fault of `export`.
Status ExportLlamaWeights(const std::string& path, const LlamaLayout& layout,
                          const float* values);

}  // namespace strata::models
