#include "models/llama/llama_weights.h"

#include <cstring>
#include <map>
#include <utility>

#include "core/io/hf_checkpoint.h"
#include "core/io/safetensors.h"
#include "core/nn/layout_weights.h"
#include "core/util/option.h"

namespace strata::models {
namespace {

Status InitFault(const std::string& path, const std::string& what) {
  return AtFault(Option::kInit,
                 Status::Corruption(Mention(Option::kInit) + " " + path + ": " + what));
}

class LlamaWeightReader final : public WeightReader {
 public:
  LlamaWeightReader(std::string path, const LlamaLayout& layout, HfCheckpoint ckpt)
      : path_(std::move(path)), layout_(layout), ckpt_(std::move(ckpt)) {}

  // Tensor by tensor, straight into the block's floats.
  Status read_block(int block, float* values) override {
    std::memset(values, 0, sizeof(float) * size_t(layout_.blocks[block].numel));
    for (const TensorSpec& t : layout_.blocks[block].tensors) {
      const SafetensorsEntry* e = ckpt_.find(t.name);
      if (e == nullptr) {
        return InitFault(path_, "tensor " + t.name + " " + ShapeString(t.shape) +
                                    " is missing; the checkpoint holds another model");
      }
      if (e->shape != t.shape) {
        return InitFault(path_, "tensor " + t.name + " in " + ckpt_.file_of(t.name) +
                                    " has shape " + ShapeString(e->shape) + " but " +
                                    layout_.config.to_string() + " needs " + ShapeString(t.shape) +
                                    "; config.json disagrees with the tensors");
      }
      STRATA_RETURN_IF_ERROR(ckpt_.read(t.name, 0, uint64_t(t.numel), values + t.offset));
      ++tensors_;
    }
    return Status::Ok();
  }

  std::string summary() const override {
    return Mention(Option::kInit) + ": loaded " + std::to_string(tensors_) + " tensors (" +
           std::to_string(layout_.config.num_params()) + " parameters) of " +
           layout_.config.to_string() + " from " + path_;
  }

 private:
  std::string path_;
  const LlamaLayout& layout_;
  HfCheckpoint ckpt_;
  int64_t tensors_ = 0;
};

}  // namespace

Result<std::unique_ptr<WeightReader>> OpenLlamaWeights(const std::string& path,
                                                       const LlamaLayout& layout) {
  STRATA_ASSIGN_OR_RETURN(HfCheckpoint ckpt, HfCheckpoint::Open(path));
  return std::unique_ptr<WeightReader>(
      std::make_unique<LlamaWeightReader>(path, layout, std::move(ckpt)));
}

Result<std::unique_ptr<WeightWriter>> CreateLlamaWeights(const std::string& path,
                                                         const LlamaLayout& layout) {
  const LlamaConfig& c = layout.config;
  return CreateLayoutWeights(path, layout,
                             {{"format", "strata-llama"},
                              {"n_layer", std::to_string(c.n_layer)},
                              {"n_embd", std::to_string(c.n_embd)},
                              {"n_head", std::to_string(c.n_head)},
                              {"n_kv_head", std::to_string(c.n_kv_head)},
                              {"ffn_dim", std::to_string(c.ffn_dim)},
                              {"vocab_size", std::to_string(c.vocab_size)},
                              {"block_size", std::to_string(c.block_size)},
                              {"tie_embeddings", c.tie_embeddings ? "true" : "false"}});
}

}  // namespace strata::models
