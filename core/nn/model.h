// The model interface: what the runtime knows of a model. A model is its description (the blocks
// of named tensors, ModelLayout) plus the ops of its blocks through a device's kernel table. The
// trainers run any model through this interface, in one step order; they never name a model
// (docs/models.md, "Adding a model").
//
// Conventions (as models/gpt2/gpt_blocks.h): B rows of T tokens per micro-batch, BT = B*T, C the
// residual stream's width. Every pointer is device memory of the device whose table `k` is, and
// stays valid for the call; ops touch it only through `k` (host code never writes device memory).
// - `params`/`grads` of a block are its contiguous floats in the layout's order.
// - Activations: each layer saves what its backward needs in a buffer of layer_acts_floats, the
//   head in one of head_acts_floats; backward's scratch (scratch_floats) is shared by every
//   block of one backward. Buffers are 64-byte aligned; the model carves them.
// - `dres` (BT, C) is the residual stream's gradient: the head's backward writes it, a layer's
//   backward reads the gradient of its output there and leaves the gradient of its input, the
//   embedding's backward reads it.
// - Gradient contributions (Note [Gradient contributions] in gradient_contribution.h): a backward's
//   contribution is made from zero and added to the running gradient; `first` says the gradient
//   is still zero and this is the step's first contribution, made straight in it. The same rule
//   for every model, so that data parallelism sums the ranks' micro-batches to one rank's bits.
// - Ties: a model whose head reads a tensor of the embedding block (GPT-2's wte, a tied LLaMA's
//   embed_tokens) gets block 0's parameters and gradients in head_forward/head_backward; the
//   head's contributions to them come before the embedding's (Note [Tied gradient order] in
//   scheduler/activations.h).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device/kernel_table.h"
#include "core/nn/model_layout.h"
#include "core/nn/split_weights.h"
#include "core/nn/tp_group.h"
#include "core/util/status.h"

namespace strata {

// The numbers of a model that the runtime sizes and checks things by.
struct ModelShape {
  std::string arch;     // "gpt2", "llama": the family, for messages and file metadata
  int n_layer = 0;
  int n_embd = 0;       // C, the residual stream's width
  int vocab_size = 0;   // token ids must be below it
  int block_size = 0;   // the context: the largest --seq
  int64_t num_params = 0;
  // The weights each token is multiplied by, forward (FLOPs per token = 6 x this + attention's).
  int64_t matmul_params = 0;
  std::string description;  // one line: the family and its shape, e.g. "llama(n_layer=2, ...)"
};

// A micro-batch's shape, the model's read-only device constants (`constants()`, uploaded once by
// the trainer; nullptr when the model has none) and, on a tensor-parallel rank's slice
// (Model::tensor_parallel_rank), the tp group the runtime runs it in (nullptr: none).
struct OpShape {
  int B = 0;
  int T = 0;
  const float* constants = nullptr;
  const TpGroup* tp = nullptr;
};

// --init's weights, block by block, so that a model larger than memory is never held whole.
class WeightReader {
 public:
  virtual ~WeightReader() = default;
  // Block `block`'s parameters in its layout (padding zeroed). Errors at fault of `init` name
  // the tensor and the file (a missing tensor, a shape the model does not have).
  virtual Status read_block(int block, float* values) = 0;
  // What the blocks read so far are, for the run's log ("--init: loaded N tensors ...").
  virtual std::string summary() const = 0;
};

// --export's weights, block by block in any order; the file appears when commit() returns OK
// (atomically, as core/io/safetensors.h writes). Destroyed before: nothing appears.
class WeightWriter {
 public:
  virtual ~WeightWriter() = default;
  virtual Status write_block(int block, const float* values) = 0;
  virtual Status commit() = 0;
};

class Model {
 public:
  virtual ~Model() = default;

  virtual const ModelLayout& layout() const = 0;
  virtual const ModelShape& shape() const = 0;
  // The head reads a tensor of block 0 (a tied embedding).
  virtual bool head_ties_embedding() const = 0;

  // Floats of each buffer for micro-batches of B rows of T tokens (each a multiple of
  // kTensorAlignFloats).
  virtual int64_t layer_acts_floats(int B, int T) const = 0;
  virtual int64_t head_acts_floats(int B, int T) const = 0;
  virtual int64_t scratch_floats(int B, int T) const = 0;
  // Weights in and out (--init, --export, --export-grads) under the model's names, block by
  // block (WeightReader, WeightWriter); errors at fault of `init` or `export`.
  virtual Result<std::unique_ptr<WeightReader>> open_weights(const std::string& path) const = 0;
  virtual Result<std::unique_ptr<WeightWriter>> create_weights(const std::string& path) const = 0;
  // The same for a whole model in memory: `values` holds layout().total_numel floats in the
  // layout's order (parameters, or gradients for export). Import logs the reader's summary.
  Status import_weights(const std::string& path, float* values) const;
  Status export_weights(const std::string& path, const float* values) const;
  // The Hugging Face config.json of this model (--export-dir), which --init reads back.
  virtual nlohmann::json hf_config() const = 0;

  // The model of one tensor-parallel rank of `tp` (every rank's is the same): its layout() is
  // the description cut by each tensor's rule (SliceLayoutForTp), its shape() the whole model's,
  // and its ops run on the rank's slice with OpShape::tp. Its blocks take their all-reduces from
  // the rules (core/nn/parallel_linear.h), its ends are vocab-parallel (core/nn/vocab_parallel.h).
  // nullptr: the family has no tensor-parallel ops. tp must divide every cut (TpIndivisible).
  virtual std::unique_ptr<Model> tensor_parallel_rank(int /*tp*/) const { return nullptr; }

  // Read-only data the ops need for sequences of T tokens, computed on the host (LLaMA's
  // rotary table); empty when none.
  virtual std::vector<float> constants(int /*T*/) const { return {}; }

  // out (BT, C) = the embedding of `tokens` (ids < vocab_size, checked by the data loader).
  virtual void embedding_forward(const KernelTable& k, const OpShape& s, const float* params,
                                 const int32_t* tokens, float* out) const = 0;
  // Layer `layer`'s forward from x (BT, C); its output is layer_output(acts).
  virtual void layer_forward(const KernelTable& k, const OpShape& s, int layer,
                             const float* params, const float* x, float* acts) const = 0;
  virtual const float* layer_output(const OpShape& s, float* acts) const = 0;
  // The mean cross-entropy of the micro-batch. `embedding`: block 0's parameters.
  virtual float head_forward(const KernelTable& k, const OpShape& s, const float* params,
                             const float* embedding, const float* x, const int32_t* targets,
                             float* acts) const = 0;
  // dres = the gradient of the objective by the head's input (written); the head's gradients
  // and, when tied, block 0's (`embedding_grads`) take their contributions. `dloss` is the
  // objective's gradient by each token's loss (1 / tokens of the step).
  virtual void head_backward(const KernelTable& k, const OpShape& s, const float* params,
                             float* grads, const float* embedding, float* embedding_grads,
                             const float* x, const int32_t* targets, float* acts, float* scratch,
                             float dloss, float* dres, bool first) const = 0;
  virtual void layer_backward(const KernelTable& k, const OpShape& s, int layer,
                              const float* params, float* grads, const float* x, float* acts,
                              float* scratch, float* dres, bool first) const = 0;
  // Split operators (--split-ops): a layer's forward and backward as layer_forward's and
  // layer_backward's, its `split` tensors given slice by slice (SplitWeights); the same bits.
  // splits_layers(): the family has them (else --split-ops is refused).
  virtual bool splits_layers() const { return false; }
  virtual void layer_forward_split(const KernelTable& k, const OpShape& s, int layer,
                                   const SplitWeights& w, const float* x, float* acts) const;
  virtual void layer_backward_split(const KernelTable& k, const OpShape& s, int layer,
                                    const SplitWeights& w, float* grads, const float* x,
                                    float* acts, float* scratch, float* dres, bool first) const;
  // Block 0's gradients take the embedding's contributions from dres. `first`: the step's first
  // contribution to the tensors the head does not touch; `first_tied`: to the tied tensor too
  // (false when the head's came first).
  virtual void embedding_backward(const KernelTable& k, const OpShape& s, float* grads,
                                  const float* dres, const int32_t* tokens, float* scratch,
                                  bool first, bool first_tied) const = 0;
};

// The group of an op of a tensor-parallel rank's model of `tp` ranks (checked: the runtime runs it
// in one of that size), or nullptr when tp is 1.
const TpGroup* TpGroupOf(const OpShape& s, int tp);

// The tensor a tied head reads: the embedding block's first (GPT-2's wte, a tied LLaMA's
// embed_tokens).
inline constexpr int kTiedTensor = 0;

// Floats of the residual stream for a micro-batch (BT, C), aligned.
inline int64_t ResidualFloats(const ModelShape& m, int B, int T) {
  return AlignedFloats(int64_t(B) * T * m.n_embd);
}

}  // namespace strata
