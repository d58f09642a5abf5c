// Slot size classes (Note [Block slots] in memory_plan.h): the device slots are not all the size
// of the largest block. A slot holds one block's parameters or gradient, so it must be at least
// that block's size; which sizes the step needs at once follows from the step program:
//   head backward holds P_head, P_emb, G_head, G_emb when the head is tied to the embedding
//   (P_head, G_head when it is not: StepProgram::tied_head);
//   a block's backward holds P_l, G_l and, tied, the embedding's gradient, which head backward
//   started and embed backward finishes (untied: embed backward starts it, alone);
// plus one prefetch slot of a transformer block's size (the blocks loaded most). For a 50k
// vocabulary the embedding is 5x a small transformer block: uniform slots would cost 5
// embeddings.
//
// Sizes are bytes rounded up to the device alignment, lists sorted largest first. Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/nn/model_layout.h"

namespace strata::scheduler {

struct BlockSlotBytes {
  uint64_t embedding = 0;  // block 0
  uint64_t transformer = 0;  // the largest transformer block (0 without layers)
  uint64_t head = 0;       // block L+1
  uint64_t largest = 0;
};
BlockSlotBytes SlotBytesOf(const ModelLayout& layout);

// The lists below take the layout as parameter slots see it and as gradient slots do: they differ
// for split blocks, whose parameter slot holds less (Note [Split operators] in split_plan.h).
// The smallest slot list with which every op of the step can run (plus one prefetch slot).
// `tied_head`: the step program's head form (StepProgram::tied_head).
std::vector<uint64_t> MinimalSlotSizes(const ModelLayout& params, const ModelLayout& grads,
                                       bool tied_head = true);
// Every block's parameters resident at once, and the gradients backward needs beside them.
std::vector<uint64_t> AllResidentSlotSizes(const ModelLayout& params, const ModelLayout& grads,
                                           bool tied_head = true);
// The same with one layout for both.
inline std::vector<uint64_t> MinimalSlotSizes(const ModelLayout& layout) {
  return MinimalSlotSizes(layout, layout);
}
inline std::vector<uint64_t> AllResidentSlotSizes(const ModelLayout& layout) {
  return AllResidentSlotSizes(layout, layout);
}
// A list that covers both: element i is the larger of the two lists' i-th sizes.
std::vector<uint64_t> CoverBoth(std::vector<uint64_t> a, std::vector<uint64_t> b);

uint64_t TotalBytes(const std::vector<uint64_t>& sizes);
// "3 x 27.04 MiB + 1 x 1.50 MiB + 1 x 8.00 KiB"
std::string DescribeSlots(const std::vector<uint64_t>& sizes);

}  // namespace strata::scheduler
