#include "scheduler/slot_sizes.h"

#include <algorithm>
#include <functional>

#include "core/device/device.h"
#include "core/util/sizes.h"

namespace strata::scheduler {
namespace {

uint64_t RoundUp(uint64_t bytes) {
  return (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
}

// Largest first, without empty sizes (a pipeline stage holds no head or embedding: Note [Stage
// programs] in step_program.h).
std::vector<uint64_t> Sorted(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end(), std::greater<>());
  while (!v.empty() && v.back() == 0) v.pop_back();
  return v;
}

}  // namespace

BlockSlotBytes SlotBytesOf(const ModelLayout& layout) {
  BlockSlotBytes b;
  const int n = layout.num_blocks();
  b.embedding = RoundUp(uint64_t(layout.blocks[0].numel) * 4);
  b.head = RoundUp(uint64_t(layout.blocks[n - 1].numel) * 4);
  for (int i = 1; i + 1 < n; ++i) {
    b.transformer = std::max(b.transformer, RoundUp(uint64_t(layout.blocks[i].numel) * 4));
  }
  b.largest = std::max({b.embedding, b.transformer, b.head});
  return b;
}

std::vector<uint64_t> CoverBoth(std::vector<uint64_t> a, std::vector<uint64_t> b) {
  a = Sorted(std::move(a));
  b = Sorted(std::move(b));
  if (a.size() < b.size()) a.swap(b);
  for (size_t i = 0; i < b.size(); ++i) a[i] = std::max(a[i], b[i]);
  return a;
}

std::vector<uint64_t> MinimalSlotSizes(const ModelLayout& params, const ModelLayout& grads,
                                       bool tied_head) {
  const BlockSlotBytes p = SlotBytesOf(params), g = SlotBytesOf(grads);
  if (!tied_head) {
    // Each op alone: head backward {P_head, G_head}, a block's backward {P_l, G_l}, the
    // embedding's forward {P_emb} and backward {G_emb}. With whole blocks the prefetch slot
    // leaves room for the next block's G_l while the last one goes down; a split block's P_l is
    // smaller, so a second slot of a block's gradient must hold it.
    const uint64_t next_grad = p.transformer < g.transformer ? g.transformer : 0;
    std::vector<uint64_t> need =
        CoverBoth({p.head, g.head}, {p.transformer, g.transformer, next_grad});
    need = CoverBoth(need, {std::max(p.embedding, g.embedding)});
    need.push_back(p.transformer > 0 ? p.transformer : p.largest);  // prefetch
    return Sorted(std::move(need));
  }
  std::vector<uint64_t> need = {p.head, p.embedding, g.head, g.embedding};  // head backward
  if (g.transformer > 0) {
    // Block backward: G_emb stays where head backward put it, which may be the largest slot.
    // With whole blocks the prefetch slot (P_l = G_l) leaves room for G_l and P_l beside it; a
    // split block's P_l is smaller, so a second slot must hold G_l however G_emb sits.
    const uint64_t beside_emb =
        p.transformer < g.transformer ? std::max(g.transformer, g.embedding) : g.embedding;
    need = CoverBoth(need, {p.transformer, g.transformer, beside_emb});
  }
  need.push_back(p.transformer > 0 ? p.transformer : p.largest);  // prefetch
  return Sorted(std::move(need));
}

std::vector<uint64_t> AllResidentSlotSizes(const ModelLayout& param_layout,
                                           const ModelLayout& grad_layout, bool tied_head) {
  const BlockSlotBytes b = SlotBytesOf(grad_layout);
  std::vector<uint64_t> params;
  for (const BlockSpec& spec : param_layout.blocks) {
    params.push_back(RoundUp(uint64_t(spec.numel) * 4));
  }
  // Gradients held beside them: head backward G_head + G_emb; block backward G_emb + G_l (an
  // untied head's G_emb is only the embedding backward's, alone).
  std::vector<uint64_t> grads =
      tied_head ? std::vector<uint64_t>{b.head, b.embedding} : CoverBoth({b.head}, {b.embedding});
  if (b.transformer > 0) {
    grads = CoverBoth(grads, tied_head ? std::vector<uint64_t>{b.embedding, b.transformer}
                                       : std::vector<uint64_t>{b.transformer});
  }
  params.insert(params.end(), grads.begin(), grads.end());
  return Sorted(std::move(params));
}

uint64_t TotalBytes(const std::vector<uint64_t>& sizes) {
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  return total;
}

std::string DescribeSlots(const std::vector<uint64_t>& sizes) {
  std::string out;
  for (size_t i = 0; i < sizes.size();) {
    size_t j = i;
    while (j < sizes.size() && sizes[j] == sizes[i]) ++j;
    if (!out.empty()) out += " + ";
    out += std::to_string(j - i) + " x " + FormatBytes(sizes[i]);
    i = j;
  }
  return out;
}

}  // namespace strata::scheduler
