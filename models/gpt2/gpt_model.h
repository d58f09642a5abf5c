// GPT-2 behind the model interface (core/nn/model.h): its layout (gpt_layout.h) and the block ops
// of gpt_blocks.h. The ops are gpt_blocks.h's, called in the order the trainers always called
// them, so a run through the interface gives the bits it gave before.
#pragma once

#include <memory>

#include "core/nn/model.h"
#include "models/gpt2/gpt_blocks.h"
#include "models/gpt2/gpt_layout.h"

namespace strata {

// GPT-2's numbers for the runtime (model.h).
ModelShape GptModelShape(const GptConfig& config);

class GptModel final : public Model {
 public:
  // `tp` > 1: one tensor-parallel rank's model (tensor_parallel_rank), its layout MakeTpLayout's
  // and its blocks gpt_blocks.h's in the rank's group, its ends tp_head.h's.
  explicit GptModel(const GptConfig& config, int tp = 1);

  const GptLayout& gpt_layout() const { return layout_; }
  const ModelLayout& layout() const override { return layout_; }
  const ModelShape& shape() const override { return shape_; }
  bool head_ties_embedding() const override { return true; }

  // gpt_weights.h's: Hugging Face GPT-2 names, the shape in __metadata__.
  Result<std::unique_ptr<WeightReader>> open_weights(const std::string& path) const override;
  Result<std::unique_ptr<WeightWriter>> create_weights(const std::string& path) const override;
  // GPT2LMHeadModel's keys (n_layer, n_head, n_embd, vocab_size, n_positions, ...).
  nlohmann::json hf_config() const override;
  std::unique_ptr<Model> tensor_parallel_rank(int tp) const override;

  int64_t layer_acts_floats(int B, int T) const override;
  int64_t head_acts_floats(int B, int T) const override;
  int64_t scratch_floats(int B, int T) const override;

  void embedding_forward(const KernelTable& k, const OpShape& s, const float* params,
                         const int32_t* tokens, float* out) const override;
  void layer_forward(const KernelTable& k, const OpShape& s, int layer, const float* params,
                     const float* x, float* acts) const override;
  const float* layer_output(const OpShape& s, float* acts) const override;
  // Split operators over the MLP's weights (TransformerWeights' slices); one rank's model only.
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
                     const int32_t* targets, float* acts, float* scratch, float dloss, float* dres,
                     bool first) const override;
  void layer_backward(const KernelTable& k, const OpShape& s, int layer, const float* params,
                      float* grads, const float* x, float* acts, float* scratch, float* dres,
                      bool first) const override;
  void embedding_backward(const KernelTable& k, const OpShape& s, float* grads, const float* dres,
                          const int32_t* tokens, float* scratch, bool first,
                          bool first_tied) const override;

 private:
  // The op's tp group when this is a tensor-parallel rank's model (checked), else nullptr.
  const TpGroup* group(const OpShape& s) const;
  // A layer's activations at this rank's widths.
  TransformerActs layer_acts(const OpShape& s, float* acts) const;

  GptLayout layout_;
  ModelShape shape_;
  int tp_ = 1;
};

}  // namespace strata
