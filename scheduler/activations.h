// ActivationLayout: the activations of one micro-batch as one size table and one carving
// function (llm.c's habit), so that what the memory plan budgets, what the benchmarks size and
// what both trainers carve is the same thing, computed in one place.
//
// It lives in scheduler/, not core/nn/, because everything beyond one block's parts is a
// decision of the step: which blocks keep their activations (--recompute), where a recomputed
// block is rebuilt, and that one backward scratch and one residual gradient serve every block.
// The model (core/nn/model.h) sizes the parts of one layer, of the head and of the scratch
// (ActivationSizes); what is inside each part is the model's own.
//
// Note [Activation layout]
// One buffer; its pieces in this order, each starting a multiple of kTensorAlignFloats floats
// (64 bytes) after the base (BT = micro_rows * seq, C = n_embd):
//   emb_out                        (BT, C)          the embedding's output, block 1's input
//   for each layer l = 0 .. L-1:
//     l <  recompute_layers        (BT, C)          only the block's output (the next block's
//                                                   input, copied out of `work` after its
//                                                   forward); backward rebuilds the rest there
//     l >= recompute_layers        layer acts       everything its backward reads, its output
//                                                   among them (Model::layer_output)
//   work (recompute_layers > 0)    layer acts       where a recomputed block runs
//   head                           head acts
//   scratch                        scratch          shared by every block's backward
//   dres, per micro-batch m        (BT, C)          the gradient along the residual stream;
//                                                   micro-batch m's is the embedding backward's
//                                                   input, which runs after every micro-batch's
//                                                   head backward (Note [Tied gradient order])
// A pipeline stage (Note [Stage activations]) carves only its own layers, and the first three
// kinds of piece (emb_out, the layers) once per micro-batch it holds in flight.
// The checkpointed blocks are the first ones: which ones does not change the arithmetic, and
// a rebuild writes a block's output again with the same bits. Moving a piece changes addresses
// only, never the values computed (both trainers agree bit for bit).
//
// Note [Tied gradient order]
// The head is tied to the embedding: wte's gradient gets a head backward's and an embedding
// backward's contribution per micro-batch, and floating-point addition does not commute. The one
// order both trainers and both micro-batch orders (step_program.h) follow is: the head's
// contributions of micro-batches 0, 1, ..., M-1, then the embedding's of 0, 1, ..., M-1. So every
// micro-batch keeps its residual gradient (dres) until the embedding backwards run, after the
// last micro-batch's block backwards. Layer-major execution needs this order (all head backwards
// run before any block backward); micro-batch-major simply defers its embedding backwards.
//
// Note [Stage activations]
// A pipeline stage (scheduler/pipeline_plan.h) runs layers [first_layer, first_layer + layers)
// and holds up to `in_flight` micro-batches between their forward and their backward (1F1B: P - s
// on stage s, GPipe: every one). Micro-batch m uses set m % in_flight: the schedules run the
// forwards in micro-batch order and the backwards too, so the micro-batches in flight are
// consecutive and never share a set. A set's emb_out is the stage's input (the embedding's output
// on stage 0, the activation received from the previous stage elsewhere); a stage's recompute
// checkpoints its own first `recompute_layers` layers. Only the last stage carves the head.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/nn/model.h"

namespace strata::scheduler {

// Floats of each kind of piece for one micro-batch shape, each a multiple of kTensorAlignFloats.
struct ActivationSizes {
  int64_t residual = 0;  // (BT, C): emb_out, a recomputed block's output, a dres
  int64_t block = 0;     // one layer's saved activations (Model::layer_acts_floats)
  int64_t head = 0;      // Model::head_acts_floats
  int64_t scratch = 0;   // Model::scratch_floats
};

// The sizes for micro-batches of B rows of T tokens: the model's own (a tensor-parallel rank's
// model, Model::tensor_parallel_rank, gives its slice's widths).
ActivationSizes StepActivationSizes(const Model& model, int B, int T);

// Where a layer's output lies inside its saved activations (a pointer into `acts`), at the
// widths StepActivationSizes sized them with.
using LayerOutputOf = std::function<float*(float* acts)>;
LayerOutputOf StepLayerOutputOf(const Model& model, int B, int T);

struct ActivationLayout {
  int n_layer = 0;
  int micro_rows = 0;        // B, rows per micro-batch
  int seq = 0;               // T, tokens per row
  int recompute_layers = 0;  // the first k transformer blocks keep only their output
  int micro_batches = 1;     // M: one dres each (Note [Tied gradient order])
  // A pipeline stage's part (Note [Stage activations]); by default the whole model, one set.
  int first_layer = 0;
  int layers = 0;  // transformer layers carved (MakeActivationLayout: n_layer by default)
  int in_flight = 1;
  bool with_head = true;
  int tp = 1;  // the grid's tp (ActivationStage::tp), which the run's fingerprint records

  // The size table (ActivationSizes').
  int64_t residual = 0;
  int64_t block = 0;
  int64_t head = 0;
  int64_t scratch = 0;

  bool recomputed(int layer) const { return layer - first_layer < recompute_layers; }
  int kept_layers() const { return layers - recompute_layers; }
  // The whole buffer, in the order of Note [Activation layout].
  int64_t floats() const;
  uint64_t bytes() const { return uint64_t(floats()) * sizeof(float); }
};

// Which part of the model a pipeline stage carves (Note [Stage activations]); layers < 0: every
// layer from first_layer on.
struct ActivationStage {
  int first_layer = 0;
  int layers = -1;
  int in_flight = 1;
  bool with_head = true;
  // The grid's tp: the model given is then a tensor-parallel rank's, whose widths the sizes are.
  int tp = 1;
};

// The layout of a model of n_layer layers whose pieces are `sizes` (for micro_rows x seq),
// micro_batches > 0 and 0 <= recompute_layers <= the stage's layers.
ActivationLayout MakeActivationLayout(const ActivationSizes& sizes, int n_layer, int micro_rows,
                                      int seq, int recompute_layers, int micro_batches = 1,
                                      const ActivationStage& stage = {});
// The same for `model`, its sizes StepActivationSizes'.
ActivationLayout MakeActivationLayout(const Model& model, int micro_rows, int seq,
                                      int recompute_layers, int micro_batches = 1,
                                      const ActivationStage& stage = {});

// One in-flight micro-batch's pieces: indexed by the model's layer, nullptr outside the stage.
struct ActivationSet {
  float* emb_out = nullptr;  // the stage's input
  // Layer l's output, the next layer's input: inside layers[l] (LayerOutputOf), or a recomputed
  // layer's own residual buffer.
  std::vector<float*> outputs;
  std::vector<float*> layers;  // each layer's saved activations; nullptr for a recomputed layer
};

// Pointers into one buffer carved by CarveActivations.
struct Activations {
  std::vector<ActivationSet> sets;  // in_flight of them
  float* work = nullptr;            // nullptr without recompute
  float* head = nullptr;            // nullptr without the head
  float* scratch = nullptr;
  std::vector<float*> dres;  // one per micro-batch
  // The first set's pieces (one set: the whole step's).
  float* emb_out = nullptr;
  std::vector<float*> outputs;
  std::vector<float*> layers;
};

// Carves `base`, which must hold layout.floats() floats and be 64-byte aligned (a Device
// allocation is), in the order of Note [Activation layout]; `output_of` finds a kept layer's
// output in its activations.
Activations CarveActivations(const ActivationLayout& layout, float* base,
                             const LayerOutputOf& output_of);

}  // namespace strata::scheduler
