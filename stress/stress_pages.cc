#include "stress/stress_pages.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <set>
#include <utility>

#include "memory/open_nvme_tier.h"
#include "storage/aligned_buffer.h"
#include "storage/fault_injector.h"
#include "storage/page_store.h"

namespace strata::stress {
namespace {

// N of a manifest named step-N; -1 for other names.
long StepOf(const std::string& name) {
  if (name.rfind("step-", 0) != 0) return -1;
  char* end = nullptr;
  const long n = std::strtol(name.c_str() + 5, &end, 10);
  return end != nullptr && *end == '\0' ? n : -1;
}

Result<std::unique_ptr<storage::PageStore>> OpenStore(const std::vector<std::string>& dirs,
                                                      uint64_t page_bytes) {
  if (dirs.empty() || !memory::PageStoreExists(dirs[0])) {
    return Status::NotFound("no page store in " + (dirs.empty() ? std::string("?") : dirs[0]));
  }
  storage::PageStoreOptions o;
  o.dirs = dirs;
  o.page_bytes = page_bytes;
  o.io.backend = storage::IoBackend::kSync;  // a few reads: no io_uring ring worth setting up
  return storage::PageStore::Open(o);
}

// The store's checkpoints, oldest first.
Result<std::vector<std::pair<long, std::string>>> Checkpoints(const storage::PageStore& store) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, store.manifest_names());
  std::vector<std::pair<long, std::string>> out;
  for (const std::string& n : names) {
    if (StepOf(n) >= 0) out.emplace_back(StepOf(n), n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status VerifyPage(storage::PageStore& store, const storage::PageRecord& r,
                  storage::AlignedBuffer& buf) {
  std::promise<Status> done;
  std::future<Status> result = done.get_future();
  STRATA_RETURN_IF_ERROR(store.read_record(
      r, buf.data(), buf.size(),
      [&done](const Status& s, const storage::PageEntry&) { done.set_value(s); }));
  return result.get();
}

}  // namespace

Result<RottedPage> RotNewestCheckpoint(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                       uint64_t pick) {
  RottedPage rot;
  {
    STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(dirs, page_bytes));
    STRATA_ASSIGN_OR_RETURN(auto checkpoints, Checkpoints(*store));
    if (checkpoints.size() < 2) return Status::NotFound("fewer than two checkpoints");
    std::set<std::pair<uint32_t, uint64_t>> shared;
    for (size_t i = 0; i + 1 < checkpoints.size(); ++i) {
      STRATA_ASSIGN_OR_RETURN(auto records, store->load_manifest(checkpoints[i].second));
      for (const auto& r : records) shared.insert({r.entry.file, r.entry.slot});
    }
    STRATA_ASSIGN_OR_RETURN(auto records, store->load_manifest(checkpoints.back().second));
    std::vector<storage::PageRecord> own;
    for (const auto& r : records) {
      if (shared.count({r.entry.file, r.entry.slot}) == 0 && r.entry.length > 0) own.push_back(r);
    }
    if (own.empty()) return Status::NotFound("no page of the newest checkpoint is its own");
    const storage::PageRecord& r = own[pick % own.size()];
    rot = {checkpoints.back().second, checkpoints.back().first, r.page, r.entry.file,
           r.entry.slot, store->slot_path(r.entry.file),
           store->slot_offset(r.entry) + (pick / own.size()) % r.entry.length};
  }  // the store is closed before its file is changed behind its back
  STRATA_RETURN_IF_ERROR(storage::FlipByteOnDisk(rot.path, rot.offset, 0x10));
  return rot;
}

Result<uint64_t> VerifyCheckpointPages(const std::vector<std::string>& dirs, uint64_t page_bytes,
                                       const std::vector<RottedPage>& rotted) {
  STRATA_ASSIGN_OR_RETURN(auto store, OpenStore(dirs, page_bytes));
  STRATA_ASSIGN_OR_RETURN(auto checkpoints, Checkpoints(*store));
  STRATA_ASSIGN_OR_RETURN(storage::AlignedBuffer buf, storage::AlignedBuffer::Allocate(page_bytes));
  uint64_t verified = 0;
  for (const auto& [step, name] : checkpoints) {
    STRATA_ASSIGN_OR_RETURN(auto records, store->load_manifest(name));
    for (const storage::PageRecord& r : records) {
      const bool known_rot = std::any_of(rotted.begin(), rotted.end(), [&](const RottedPage& x) {
        return x.manifest == name && x.file == r.entry.file && x.slot == r.entry.slot &&
               x.page == r.page;
      });
      if (known_rot) continue;
      const Status s = VerifyPage(*store, r, buf);
      if (!s.ok()) return s.with_context("checkpoint " + name + " page " + std::to_string(r.page));
      ++verified;
    }
  }
  return verified;
}

}  // namespace strata::stress
