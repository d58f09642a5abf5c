// Import and export of GPT weights as safetensors with Hugging Face GPT-2 names, so other
// frameworks read what Strata writes and Strata starts from what they publish.
//
// Export writes every tensor of the layout (transformer.wte.weight, transformer.h.0.attn.
// c_attn.weight of shape (C, 3C) as HF's Conv1D stores it, ...) as F32, and the model shape in
// __metadata__ (n_layer, n_head, n_embd, vocab_size, block_size), so `--init file` alone
// defines the model. The same function exports gradients (same names, same layout).
// Import and the shape read also take a Hugging Face model directory (--export-dir's), reading its
// model.safetensors. Import also accepts names without the "transformer." prefix, ignores the
// attention-mask buffers (attn.bias, attn.masked_bias) and a tied lm_head.weight, and converts
// F16/BF16.
#pragma once

#include <memory>
#include <string>

#include "core/nn/model.h"
#include "core/util/status.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {

// `values` holds layout.total_numel floats in the layout's order (parameters or gradients).
Status ExportGptSafetensors(const std::string& path, const GptLayout& layout, const float* values);
// The same block by block (core/nn/layout_weights.h); `layout` must outlive the writer.
Result<std::unique_ptr<WeightWriter>> CreateGptWeights(const std::string& path,
                                                       const GptLayout& layout);

// The model shape of a safetensors file: from __metadata__ when present, else inferred from
// tensor shapes (n_head then defaults to n_embd / 64, as in GPT-2).
Result<GptConfig> ReadGptConfigFromSafetensors(const std::string& path);

// Fills `values` (layout.total_numel floats) from the file. Every tensor of the layout must be
// present with its exact shape; the error names the tensor, its expected and found shapes.
Status ImportGptSafetensors(const std::string& path, const GptLayout& layout, float* values);
// The same as a WeightReader: the header is read at open, each block's tensors when it is asked
// for (never the whole file); `layout` must outlive the reader.
Result<std::unique_ptr<WeightReader>> OpenGptWeights(const std::string& path,
                                                     const GptLayout& layout);

}  // namespace strata
