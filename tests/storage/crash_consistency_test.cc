// Crash consistency: a child process commits batches of page versions (crash_schedule.h) and
// acknowledges each on a pipe; the parent SIGKILLs it at random moments, reopens the store and
// checks that every page reads back checksum-valid as the version of one committed batch no
// older than the last acknowledged one, that batches are atomic, and that
// referenced + free slots = total slots. STRATA_CRASH_KILLS sets the number of kills (100).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <set>
#include <thread>

#include "core/util/log.h"
#include "storage/page_store.h"
#include "tests/storage/crash_schedule.h"
#include "tests/storage/storage_test_util.h"

#ifndef STRATA_CRASH_CHILD
#error "tests/storage/tests.cmake defines STRATA_CRASH_CHILD"
#endif

namespace strata::storage {
namespace {

using namespace testing;

struct Child {
  pid_t pid = -1;
  int ack_fd = -1;
};

Child Spawn(const std::string& dir) {
  int fds[2];
  STRATA_CHECK(::pipe2(fds, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  STRATA_CHECK(pid >= 0);
  if (pid == 0) {
    ::dup2(fds[1], 100);  // dup2 clears O_CLOEXEC on the copy
    const char* argv[] = {STRATA_CRASH_CHILD, dir.c_str(), "100", nullptr};
    ::execv(STRATA_CRASH_CHILD, const_cast<char* const*>(argv));
    ::_exit(127);
  }
  ::close(fds[1]);
  return Child{pid, fds[0]};
}

// Reads one acknowledgement; false on end of file (the child died).
bool ReadAck(int fd, uint64_t* batch) {
  size_t got = 0;
  while (got < sizeof(*batch)) {
    ssize_t n = ::read(fd, reinterpret_cast<char*>(batch) + got, sizeof(*batch) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

PageStoreOptions Options(const std::string& dir) {
  PageStoreOptions o;
  o.dirs = {dir};
  o.page_bytes = kCrashPageBytes;
  o.capacity_bytes = kCrashSlots * kCrashPageBytes;
  return o;
}

// Checks the reopened store against the last acknowledged batch; returns the committed batch.
uint64_t Verify(const std::string& dir, uint64_t acked, int kill) {
  Result<std::unique_ptr<PageStore>> opened = PageStore::Open(Options(dir));
  EXPECT_TRUE(opened.ok()) << "kill " << kill << ": " << opened.status().to_string();
  if (!opened.ok()) return acked;
  PageStore& store = **opened;
  const std::vector<PageRecord> pages = store.pages();
  uint64_t k = 0;
  for (const PageRecord& r : pages) k = std::max(k, r.entry.version);
  EXPECT_GE(k, acked) << "kill " << kill << ": acknowledged batch " << acked << " was lost";
  EXPECT_LE(k, acked + 1) << "kill " << kill << ": batch " << k << " was never started";

  std::set<uint64_t> slots;  // file * 2^32 + slot, referenced by mappings or manifests
  AlignedBuffer buf = MustAllocate(kCrashPageBytes);
  auto check_record = [&](const PageRecord& r, uint64_t expected, const std::string& what) {
    EXPECT_EQ(r.entry.version, expected) << what << " page " << r.page << " (batch atomicity)";
    slots.insert((uint64_t{r.entry.file} << 32) | r.entry.slot);
    std::promise<Status> done;
    Status s = store.read_record(r, buf.data(), buf.size(),
                                 [&](const Status& st, const PageEntry&) { done.set_value(st); });
    if (s.ok()) s = done.get_future().get();
    EXPECT_TRUE(s.ok()) << what << ": " << s.to_string();
    EXPECT_TRUE(PageMatches(buf.data(), kCrashPageBytes, r.page, r.entry.version))
        << what << " page " << r.page << " version " << r.entry.version;
  };
  uint64_t present = 0;
  for (uint64_t p = 0; p < kCrashPages; ++p) present += ExpectedVersion(k, p) > 0;
  EXPECT_EQ(pages.size(), present) << "kill " << kill;
  for (const PageRecord& r : pages) {
    check_record(r, ExpectedVersion(k, r.page), "kill " + std::to_string(kill) + " current");
  }
  Result<std::vector<std::string>> names = store.manifest_names();
  EXPECT_TRUE(names.ok());
  EXPECT_LE(names->size(), 1u);
  for (const std::string& name : *names) {
    const uint64_t m = std::stoull(name.substr(1));
    Result<std::vector<PageRecord>> records = store.load_manifest(name);
    EXPECT_TRUE(records.ok());
    for (const PageRecord& r : *records) {
      check_record(r, ExpectedVersion(m, r.page), "kill " + std::to_string(kill) + " " + name);
    }
  }
  const PageStoreStats stats = store.stats();
  EXPECT_EQ(stats.slots_total, kCrashSlots);
  EXPECT_EQ(stats.slots_referenced, slots.size()) << "kill " << kill;
  EXPECT_EQ(stats.slots_referenced + stats.slots_free, stats.slots_total) << "kill " << kill;
  return k;
}

TEST(CrashConsistency, RandomKillsLoseNoAcknowledgedCommit) {
  const char* env = std::getenv("STRATA_CRASH_KILLS");
  const int kills = env != nullptr ? std::atoi(env) : 100;
  const char* seed_env = std::getenv("STRATA_CRASH_SEED");
  const uint64_t seed =
      seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : std::random_device{}();
  std::mt19937_64 rng(seed);
  SCOPED_TRACE("STRATA_CRASH_SEED=" + std::to_string(seed));
  SetLogLevel("warn");
  ScratchDir dir;
  uint64_t committed = 0;
  int during_startup = 0;
  for (int kill = 0; kill < kills && !::testing::Test::HasFailure(); ++kill) {
    Child child = Spawn(dir.path());
    // Kill after a random number of acknowledged batches (0: during open and recovery),
    // plus a random few hundred microseconds so that the kill lands anywhere in a commit.
    const uint64_t target = rng() % 6;
    uint64_t acked = committed, batch = 0;
    bool alive = true;
    for (uint64_t n = 0; n < target && alive; ++n) {
      alive = ReadAck(child.ack_fd, &batch);
      if (alive) acked = batch;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (target == 0 ? 30000 : 2000)));
    ::kill(child.pid, SIGKILL);
    int wstatus = 0;
    ::waitpid(child.pid, &wstatus, 0);
    while (ReadAck(child.ack_fd, &batch)) acked = batch;  // acks written before the kill
    ::close(child.ack_fd);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
        << "the child exited by itself (status " << wstatus << "); see its stderr above";
    during_startup += acked == committed;
    committed = Verify(dir.path(), acked, kill);
  }
  std::printf("%d kills, %llu batches committed, %d kills before the first commit of a run\n",
              kills, static_cast<unsigned long long>(committed), during_startup);
  EXPECT_GT(committed, static_cast<uint64_t>(kills)) << "the children made too little progress";
}

// Kills land while the child creates a fresh store: what is left is either no store or a whole
// one, and the next open always succeeds (Note [Creating a store]).
TEST(CrashConsistency, KillsDuringCreationLeaveNoHalfStore) {
  std::mt19937_64 rng(std::random_device{}());
  SetLogLevel("warn");
  for (int kill = 0; kill < 20 && !::testing::Test::HasFailure(); ++kill) {
    ScratchDir dir;
    Child child = Spawn(dir.path());
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 15000));
    ::kill(child.pid, SIGKILL);
    ::waitpid(child.pid, nullptr, 0);
    uint64_t acked = 0, batch = 0;
    while (ReadAck(child.ack_fd, &batch)) acked = batch;
    ::close(child.ack_fd);
    Verify(dir.path(), acked, kill);
  }
}

}  // namespace
}  // namespace strata::storage
