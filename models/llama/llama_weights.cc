#include "models/llama/llama_weights.h"

#include <cstring>
#include <map>
#include <vector>

#include "core/io/hf_checkpoint.h"
#include "core/io/safetensors.h"
#include "core/util/log.h"
#include "core/util/option.h"

namespace strata::models {
namespace {

Status InitFault(const std::string& path, const std::string& what) {
  return AtFault(Option::kInit,
                 Status::Corruption(Mention(Option::kInit) + " " + path + ": " + what));
}

}  // namespace

Status ImportLlamaWeights(const std::string& path, const LlamaLayout& layout, float* values) {
  STRATA_ASSIGN_OR_RETURN(const HfCheckpoint ckpt, HfCheckpoint::Open(path));
  int64_t tensors = 0;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    float* block = values + layout.block_offset[b];
    std::memset(block, 0, sizeof(float) * size_t(layout.blocks[b].numel));
    for (const TensorSpec& t : layout.blocks[b].tensors) {
      const SafetensorsEntry* e = ckpt.find(t.name);
      if (e == nullptr) {
        return InitFault(path, "tensor " + t.name + " " + ShapeString(t.shape) +
                                   " is missing; the checkpoint holds another model");
      }
      if (e->shape != t.shape) {
        return InitFault(path, "tensor " + t.name + " in " + ckpt.file_of(t.name) +
                                   " has shape " + ShapeString(e->shape) + " but " +
                                   layout.config.to_string() + " needs " +
                                   ShapeString(t.shape) +
                                   "; config.json disagrees with the tensors");
      }
      STRATA_RETURN_IF_ERROR(ckpt.read(t.name, 0, uint64_t(t.numel), block + t.offset));
      ++tensors;
    }
  }
  Logger("train")->info("{}: loaded {} tensors ({} parameters) of {} from {}",
                        Mention(Option::kInit), tensors, layout.config.num_params(),
                        layout.config.to_string(), path);
  return Status::Ok();
}

Status ExportLlamaWeights(const std::string& path, const LlamaLayout& layout,
                          const float* values) {
  std::vector<TensorView> views;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    for (const TensorSpec& t : layout.blocks[b].tensors) {
      views.push_back({t.name, t.shape, values + layout.block_offset[b] + t.offset});
    }
  }
  const LlamaConfig& c = layout.config;
  const std::map<std::string, std::string> meta = {
      {"format", "strata-llama"},
      {"n_layer", std::to_string(c.n_layer)},
      {"n_embd", std::to_string(c.n_embd)},
      {"n_head", std::to_string(c.n_head)},
      {"n_kv_head", std::to_string(c.n_kv_head)},
      {"ffn_dim", std::to_string(c.ffn_dim)},
      {"vocab_size", std::to_string(c.vocab_size)},
      {"block_size", std::to_string(c.block_size)},
      {"tie_embeddings", c.tie_embeddings ? "true" : "false"}};
  return AtFault(Option::kExport, WriteSafetensors(path, views, meta)
                                      .with_context(Mention(Option::kExport) + " " + path));
}

}  // namespace strata::models
