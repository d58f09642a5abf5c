#include "memory/page_table.h"

#include "core/util/check.h"

namespace strata::memory::internal {

const char* PageStateName(PageState state) {
  switch (state) {
    case PageState::kZero:
      return "zero";
    case PageState::kOnNvme:
      return "on nvme";
    case PageState::kLoading:
      return "loading";
    case PageState::kClean:
      return "clean";
    case PageState::kDirty:
      return "dirty";
    case PageState::kStaging:
      return "staging";
    case PageState::kStaged:
      return "staged";
  }
  return "unknown";
}

bool PageEntry::can_pin(Access access) const {
  if (!resident() || moving()) return false;
  if (access == Access::kRead) return !writer;
  return state != PageState::kStaged && !writer && readers == 0;
}

bool PageEntry::begin_load() {
  STRATA_CHECK(state == PageState::kZero || state == PageState::kOnNvme)
      << "load of a page in state " << PageStateName(state);
  const bool from_nvme = state == PageState::kOnNvme;
  state = PageState::kLoading;
  return from_nvme;
}

void PageEntry::finish_load(void* host_frame) {
  STRATA_CHECK(state == PageState::kLoading && host_frame != nullptr);
  frame = host_frame;
  state = PageState::kClean;
}

void PageEntry::abort_load() {
  STRATA_CHECK(state == PageState::kLoading);
  state = nvme_current ? PageState::kOnNvme : PageState::kZero;
}

void PageEntry::pin(Access access, std::string holder, uint64_t tick) {
  STRATA_CHECK(can_pin(access)) << "pin of a page in state " << PageStateName(state);
  if (access == Access::kRead) {
    ++readers;
  } else {
    writer = true;
    state = PageState::kDirty;
    nvme_current = false;
  }
  holders.push_back(Holder{std::move(holder), access});
  last_use.store(tick, std::memory_order_relaxed);
}

void PageEntry::unpin(Access access, uint64_t tick) {
  const bool read = access == Access::kRead;
  if (read) {
    STRATA_CHECK(readers > 0) << "release of a page that is not pinned for read";
    --readers;
  } else {
    STRATA_CHECK(writer) << "release of a page that is not pinned for write";
    writer = false;
  }
  for (auto it = holders.begin(); it != holders.end(); ++it) {
    if ((it->access == Access::kRead) == read) {
      holders.erase(it);
      break;
    }
  }
  last_use.store(tick, std::memory_order_relaxed);
}

void* PageEntry::drop_clean() {
  STRATA_CHECK(state == PageState::kClean && !pinned());
  state = nvme_current ? PageState::kOnNvme : PageState::kZero;
  void* f = frame;
  frame = nullptr;
  return f;
}

void PageEntry::begin_stage() {
  STRATA_CHECK(can_stage() && !writer) << "staging a page in state " << PageStateName(state);
  state = PageState::kStaging;
}

void PageEntry::finish_stage(bool ok) {
  STRATA_CHECK(state == PageState::kStaging);
  state = ok ? PageState::kStaged : PageState::kDirty;
}

void PageEntry::finish_commit(bool ok) {
  STRATA_CHECK(state == PageState::kStaged) << "commit of a page in state " << PageStateName(state);
  state = ok ? PageState::kClean : PageState::kDirty;
  nvme_current = ok;
}

void* PageEntry::discard() {
  STRATA_CHECK(!moving() && !pinned()) << "discard of a page in state " << PageStateName(state);
  void* give_back = nullptr;
  if (state == PageState::kStaged) {
    STRATA_CHECK(staged_dead_frame == nullptr);
    staged_dead_frame = frame;  // the commit gives it back
  } else if (resident()) {
    give_back = frame;
  }
  frame = nullptr;
  state = PageState::kZero;
  nvme_current = false;
  return give_back;
}

}  // namespace strata::memory::internal
