#include "embed/layout.h"

#include <algorithm>
#include <cstdint>
#include <map>

#include "core/util/check.h"
#include "core/util/sizes.h"
#include "strata.h"

namespace strata::embed {
namespace {

// Where a tensor may start inside its group's stream of bytes (Note [Page packing]).
constexpr uint64_t kTensorAlignBytes = 256;

const char* DtypeName(int dtype) {
  static constexpr const char* kNames[] = {"STRATA_F32", "STRATA_F16", "STRATA_BF16",
                                           "STRATA_F64", "STRATA_I32", "STRATA_I64",
                                           "STRATA_U8"};
  return dtype >= 0 && dtype <= STRATA_U8 ? kNames[dtype] : "an unknown dtype";
}

memory::Role PageRole(int role, bool second_moment) {
  switch (role) {
    case STRATA_ROLE_PARAMETER:
      return memory::Role::kParam;
    case STRATA_ROLE_GRADIENT:
      return memory::Role::kGrad;
    case STRATA_ROLE_OPTIMIZER_STATE:
      return second_moment ? memory::Role::kAdamV : memory::Role::kAdamM;
    default:
      return memory::Role::kOther;
  }
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

uint64_t DtypeBytes(int dtype) {
  switch (dtype) {
    case STRATA_F32: case STRATA_I32: return 4;
    case STRATA_F16: case STRATA_BF16: return 2;
    case STRATA_F64: case STRATA_I64: return 8;
    case STRATA_U8: return 1;
    default: return 0;
  }
}

Status Layout::check_size(const TensorInfo& info) const {
  const std::string what = "tensor '" + info.name + "' is " + std::to_string(info.bytes) + " bytes";
  if (info.bytes == 0) return Status::InvalidArgument("tensor '" + info.name + "' has 0 bytes");
  const uint64_t elem = DtypeBytes(info.dtype);
  if (elem == 0) return Status::InvalidArgument(what + " of " + DtypeName(info.dtype));
  if (info.bytes % elem != 0) {
    return Status::InvalidArgument(what + ", not a whole number of " + DtypeName(info.dtype) +
                                   " elements (" + std::to_string(elem) + " bytes each)");
  }
  if (info.bytes > uint64_t(INT64_MAX)) {
    return Status::InvalidArgument(what + ", above the 8 EiB a tensor may have");
  }
  if (tensors_.size() >= kMaxTensors) {
    return Status::ResourceExhausted("cannot register '" + info.name + "': a runtime may have " +
                                     std::to_string(kMaxTensors) + " tensors");
  }
  return Status::Ok();
}

// Note [Sizes up front]: MakePagePlan's packing (Note [Page packing]), counted. A tensor that
// fits in a page but not in what is left of the last one starts a new page; any tensor then
// runs on from its (aligned) start over as many pages as it needs.
Layout::Fill Layout::fill_after(Fill fill, uint64_t bytes) const {
  const uint64_t page = page_bytes_;
  if (fill.pages == 0) {
    fill = {1, 0};
  } else {
    fill.offset = (fill.offset + kTensorAlignBytes - 1) / kTensorAlignBytes * kTensorAlignBytes;
    if (fill.offset >= page || (bytes <= page && fill.offset + bytes > page)) {
      fill = {fill.pages + 1, 0};
    }
  }
  // From fill.offset (< page) on: `whole` full pages' worth, then `rest` (< 2 pages).
  const uint64_t whole = bytes / page, rest = fill.offset + bytes % page;
  if (rest == 0) return {fill.pages + whole - 1, page};
  const uint64_t last = (rest + page - 1) / page;  // 1 or 2
  return {fill.pages + whole + last - 1, rest - (last - 1) * page};
}

// Where `info` (its group set) would go, and the pages it would add.
Layout::Placement Layout::place(const TensorInfo& info) const {
  Placement at;
  const auto known = group_ids_.find(info.group);
  at.group = known != group_ids_.end() ? known->second : int(group_ids_.size());
  at.key = {at.group, int(PageRole(info.role, EndsWith(info.name, ".exp_avg_sq")))};
  const auto fill = fills_.find(at.key);
  const Fill before = fill != fills_.end() ? fill->second : Fill{};
  at.after = fill_after(before, info.bytes);
  at.added_pages = at.after.pages - before.pages;
  return at;
}

Result<size_t> Layout::add(TensorInfo info) {
  if (sealed_) {
    return Status::FailedPrecondition(
        "cannot register '" + info.name + "': the layout was sealed by the first acquire, "
        "prefetch, discard or step; register every tensor before using any");
  }
  if (info.name.empty()) return Status::InvalidArgument("a tensor needs a non-empty name");
  if (by_name_.count(info.name)) {
    return Status::AlreadyExists("tensor '" + info.name + "' is already registered");
  }
  STRATA_RETURN_IF_ERROR(check_size(info));
  if (info.group.empty()) info.group = info.name;
  const Placement at = place(info);
  const uint64_t pages = counted_pages_ + at.added_pages;
  STRATA_RETURN_IF_ERROR(limits_.check("'" + info.name + "'", info.bytes, pages));
  group_ids_.emplace(info.group, at.group);
  fills_[at.key] = at.after;
  counted_pages_ = pages;
  group_of_.push_back(at.group);
  by_name_[info.name] = tensors_.size();
  pair_member_.push_back(0);
  grad_pair_.push_back(-1);
  tensors_.push_back(std::move(info));
  return tensors_.size() - 1;
}

Status Layout::check_pair_tensor(size_t i, int role, const char* what) const {
  const TensorInfo& t = tensors_[i];
  if (t.role != role) {
    return Status::InvalidArgument("strata_register_pair: '" + t.name + "' is not a " + what +
                                   " (register it with the role STRATA_ROLE_" +
                                   (role == STRATA_ROLE_PARAMETER ? "PARAMETER" : "GRADIENT") +
                                   ")");
  }
  if (t.dtype != STRATA_F32) {
    return Status::InvalidArgument("strata_register_pair: '" + t.name +
                                   "' is not STRATA_F32; the host AdamW works on float32");
  }
  if (pair_member_[i]) {
    return Status::AlreadyExists("strata_register_pair: '" + t.name + "' is already in a pair");
  }
  return Status::Ok();
}

Status Layout::add_pair(size_t param, size_t grad, float weight_decay) {
  STRATA_RETURN_IF_ERROR(check_pair_tensor(param, STRATA_ROLE_PARAMETER, "parameter"));
  STRATA_RETURN_IF_ERROR(check_pair_tensor(grad, STRATA_ROLE_GRADIENT, "gradient"));
  const TensorInfo& p = tensors_[param];
  if (p.bytes % sizeof(float) != 0) {
    return Status::InvalidArgument("strata_register_pair: '" + p.name + "' is " +
                                   std::to_string(p.bytes) + " bytes, not whole float32s");
  }
  if (tensors_[grad].bytes != p.bytes) {
    return Status::InvalidArgument("strata_register_pair: '" + p.name + "' is " +
                                   std::to_string(p.bytes) + " bytes but its gradient '" +
                                   tensors_[grad].name + "' is " +
                                   std::to_string(tensors_[grad].bytes));
  }
  Pair pair{param, grad, 0, 0, weight_decay};
  // Copies: add() grows tensors_, which moves `p`.
  const std::string base = p.name;
  const TensorInfo m{base + ".exp_avg", p.bytes, STRATA_F32, STRATA_ROLE_OPTIMIZER_STATE, p.group};
  const TensorInfo v{base + ".exp_avg_sq", p.bytes, STRATA_F32, STRATA_ROLE_OPTIMIZER_STATE,
                     p.group};
  // Both moments or neither: their names and pages are checked before either is added (their
  // page classes differ, so their pages add up).
  for (const TensorInfo* t : {&m, &v}) {
    if (by_name_.count(t->name)) {
      return Status::AlreadyExists("strata_register_pair: '" + t->name +
                                   "', the name of a moment of '" + base +
                                   "', is already registered");
    }
  }
  STRATA_RETURN_IF_ERROR(limits_.check(
      "the moments of '" + base + "' (" + m.name + ", " + v.name + ")", 2 * m.bytes,
      counted_pages_ + place(m).added_pages + place(v).added_pages));
  STRATA_ASSIGN_OR_RETURN(pair.exp_avg, add(m));
  STRATA_ASSIGN_OR_RETURN(pair.exp_avg_sq, add(v));
  pair_member_[param] = pair_member_[grad] = 1;
  grad_pair_[grad] = int64_t(pairs_.size());
  pairs_.push_back(pair);
  return Status::Ok();
}

Result<size_t> Layout::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return Status::NotFound("no tensor named '" + name + "'");
  return it->second;
}

bool Layout::in_pair(size_t tensor) const { return pair_member_[tensor] != 0; }

int64_t Layout::grad_pair(size_t tensor) const { return grad_pair_[tensor]; }

Status Layout::seal() {
  std::vector<memory::TensorEntry> entries;
  entries.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    entries.push_back({group_of_[i], PageRole(t.role, EndsWith(t.name, ".exp_avg_sq")),
                       t.name, int64_t(t.bytes)});
  }
  memory::PagePlanOptions po;
  po.page_bytes = page_bytes_;
  po.elem_bytes = 1;
  po.tensor_align_bytes = kTensorAlignBytes;
  STRATA_ASSIGN_OR_RETURN(memory::PagePlan plan, memory::MakePagePlan(entries, po));
  num_pages_ = plan.num_pages();
  STRATA_CHECK(num_pages_ == counted_pages_)
      << "Note [Sizes up front]: the plan has " << num_pages_ << " pages, the count "
      << counted_pages_;
  page_tensors_.assign(num_pages_, {});
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const auto spans = plan.spans_of(i);
    tensors_[i].page = spans[0].page;
    tensors_[i].offset = spans[0].page_offset_bytes;
    tensors_[i].num_pages = spans.size();
    for (const auto& span : spans) page_tensors_[span.page].push_back(i);
  }
  build_units();
  sealed_ = true;
  return Status::Ok();
}

std::pair<memory::PageId, uint64_t> Layout::locate(size_t tensor, uint64_t at) const {
  const TensorInfo& t = tensors_[tensor];
  const uint64_t from_first = t.offset + at;
  return {t.page + from_first / page_bytes_, from_first % page_bytes_};
}

std::vector<Piece> Layout::pieces(size_t tensor) const {
  const TensorInfo& t = tensors_[tensor];
  std::vector<Piece> out;
  for (uint64_t at = 0; at < t.bytes;) {
    const auto [page, offset] = locate(tensor, at);
    const uint64_t bytes = std::min(t.bytes - at, page_bytes_ - offset);
    out.push_back({page, offset, at, bytes});
    at += bytes;
  }
  return out;
}

Piece Layout::piece_in(size_t tensor, memory::PageId page) const {
  for (const Piece& p : pieces(tensor)) {
    if (p.page == page) return p;
  }
  return {page, 0, 0, 0};
}

// Splits each pair at every page boundary of any of its four tensors (Note [Update units]).
void Layout::build_units() {
  std::map<std::array<memory::PageId, 4>, size_t> index;
  for (size_t k = 0; k < pairs_.size(); ++k) {
    pair_chunks_.push_back(chunks_.size());
    const Pair& p = pairs_[k];
    const size_t members[4] = {p.param, p.grad, p.exp_avg, p.exp_avg_sq};
    std::vector<uint64_t> cuts = {0, tensors_[p.param].bytes / 4};
    for (size_t t : members) {
      for (const Piece& piece : pieces(t)) cuts.push_back(piece.tensor_offset / 4);
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      std::array<memory::PageId, 4> pages;
      for (int r = 0; r < 4; ++r) pages[r] = locate(members[r], cuts[c] * 4).first;
      const Chunk chunk{chunks_.size(), k, cuts[c], cuts[c + 1]};
      chunks_.push_back(chunk);
      auto [it, inserted] = index.emplace(pages, units_.size());
      if (inserted) units_.push_back({pages, {}});
      units_[it->second].chunks.push_back(chunk);
    }
  }
  pair_chunks_.push_back(chunks_.size());
  page_units_.assign(num_pages_, {});
  for (size_t u = 0; u < units_.size(); ++u) {
    for (memory::PageId page : units_[u].pages) {
      auto& list = page_units_[page];
      if (list.empty() || list.back() != u) list.push_back(u);
    }
  }
}

}  // namespace strata::embed
