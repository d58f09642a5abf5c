// LLaMA behind the model interface (core/nn/model.h): its layout (llama_layout.h), its decoder
// layer (llama_block.h) and its ends (llama_ends.h). The rotary table for the run's T is its one
// device constant. Gradient contributions follow the interface's rule through
// core/nn/gradient_contribution.h, as GPT-2's do.
#pragma once

#include "core/nn/model.h"
#include "models/llama/llama_layout.h"

namespace strata::models {

class LlamaModel final : public Model {
 public:
  // `tp` > 1: one tensor-parallel rank's model (tensor_parallel_rank): its layout cut by the
  // description's rules, its ops at the slice's widths.
  explicit LlamaModel(const LlamaConfig& config, int tp = 1);

  const LlamaLayout& llama_layout() const { return layout_; }
  const ModelLayout& layout() const override { return layout_; }
  const ModelShape& shape() const override { return shape_; }
  bool head_ties_embedding() const override { return layout_.config.tie_embeddings; }

  // llama_weights.h's: Hugging Face names, from a file or a model directory.
  Result<std::unique_ptr<WeightReader>> open_weights(const std::string& path) const override;
  Result<std::unique_ptr<WeightWriter>> create_weights(const std::string& path) const override;
  // LlamaForCausalLM's keys, as LlamaConfigFromHf reads them.
  nlohmann::json hf_config() const override;
  std::unique_ptr<Model> tensor_parallel_rank(int tp) const override;

  int64_t layer_acts_floats(int B, int T) const override;
  int64_t head_acts_floats(int B, int T) const override;
  int64_t scratch_floats(int B, int T) const override;
  // cos then sin, each (T, head_dim / 2) (kernels::rope_table).
  std::vector<float> constants(int T) const override;

  void embedding_forward(const KernelTable& k, const OpShape& s, const float* params,
                         const int32_t* tokens, float* out) const override;
  void layer_forward(const KernelTable& k, const OpShape& s, int layer, const float* params,
                     const float* x, float* acts) const override;
  const float* layer_output(const OpShape& s, float* acts) const override;
  // Split operators over the MLP's weights (one rank's model only); layer_forward and
  // layer_backward are these with every weight whole.
  bool splits_layers() const override { return tp_ == 1; }
  void layer_forward_split(const KernelTable& k, const OpShape& s, int layer, const SplitWeights& w,
                           const float* x, float* acts) const override;
  void layer_backward_split(const KernelTable& k, const OpShape& s, int layer,
                            const SplitWeights& w, float* grads, const float* x, float* acts,
                            float* scratch, float* dres, bool first) const override;
  float head_forward(const KernelTable& k, const OpShape& s, const float* params,
                     const float* embedding, const float* x, const int32_t* targets,
                     float* acts) const override;
  void head_backward(const KernelTable& k, const OpShape& s, const float* params, float* grads,
                     const float* embedding, float* embedding_grads, const float* x,
                     const int32_t* targets, float* acts, float* scratch, float dloss,
                     float* dres, bool first) const override;
  void layer_backward(const KernelTable& k, const OpShape& s, int layer, const float* params,
                      float* grads, const float* x, float* acts, float* scratch, float* dres,
                      bool first) const override;
  void embedding_backward(const KernelTable& k, const OpShape& s, float* grads,
                          const float* dres, const int32_t* tokens, float* scratch, bool first,
                          bool first_tied) const override;

 private:
  // The ops' scratch, then the room a later gradient contribution is made in.
  int64_t op_scratch_floats(int B, int T) const;
  const float* lm_head(const float* params, const float* embedding) const;
  // The op's tp group when this is a tensor-parallel rank's model (checked), else nullptr.
  const TpGroup* group(const OpShape& s) const;

  LlamaLayout layout_;
  ModelShape shape_;
  int tp_ = 1;
};

}  // namespace strata::models
