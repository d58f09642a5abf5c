// strata_storage_crash_child DIR ACK_FD: commits batches of the crash schedule into the store
// in DIR forever, writing the number of each acknowledged batch (8 bytes) to ACK_FD. The
// crash-consistency test SIGKILLs it at random moments.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/util/log.h"
#include "storage/page_store.h"
#include "tests/storage/crash_schedule.h"
#include "tests/storage/storage_test_util.h"

namespace {

using namespace strata::storage;
using namespace strata::storage::testing;

int Fail(const strata::Status& s) {
  std::fprintf(stderr, "crash child: %s\n", s.to_string().c_str());
  return 3;
}

int Run(const std::string& dir, int ack_fd) {
  PageStoreOptions options;
  options.dirs = {dir};
  options.page_bytes = kCrashPageBytes;
  options.capacity_bytes = kCrashSlots * kCrashPageBytes;
  options.io.queue_depth = 8;
  options.io.request_bytes = 8 * strata::kKiB;
  auto opened = PageStore::Open(options);
  if (!opened.ok()) return Fail(opened.status());
  PageStore& store = **opened;
  uint64_t k = 0;
  for (const PageRecord& r : store.pages()) k = std::max(k, r.entry.version);
  std::vector<AlignedBuffer> buffers;
  for (uint64_t p = 0; p < kCrashPages; ++p) buffers.push_back(MustAllocate(kCrashPageBytes));
  for (;;) {
    ++k;
    {
      PageStore::Batch batch = store.new_batch();
      for (uint64_t p = 0; p < kCrashPages; ++p) {
        if (!InBatch(k, p)) continue;
        FillPage(buffers[p].data(), kCrashPageBytes, p, k);
        strata::Status s =
            store.write_page_version(batch, p, k, buffers[p].data(), kCrashPageBytes);
        if (!s.ok()) return Fail(s);
      }
      strata::Status s = store.commit(batch);
      if (!s.ok()) return Fail(s);
    }
    if (::write(ack_fd, &k, sizeof(k)) != static_cast<ssize_t>(sizeof(k))) return 4;
    if (k % kManifestEvery == 0) {
      auto names = store.manifest_names();
      if (!names.ok()) return Fail(names.status());
      for (const std::string& name : *names) {
        strata::Status s = store.delete_manifest(name);
        if (!s.ok()) return Fail(s);
      }
      // (Appending instead of "m" + to_string(k) avoids a GCC 12 -Wrestrict false positive.)
      std::string name = "m";
      name.append(std::to_string(k));
      strata::Status s = store.save_manifest(name);
      if (!s.ok()) return Fail(s);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR ACK_FD\n", argv[0]);
    return 2;
  }
  strata::SetLogLevel("warn");
  return Run(argv[1], std::atoi(argv[2]));
}
