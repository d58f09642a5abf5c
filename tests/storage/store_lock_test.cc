// One owner per store (storage/store_lock.h): a second open, from this process or another,
// fails naming the owner's pid and touches nothing; the lock goes with its owner, also when the
// owner is SIGKILLed.
#include "storage/store_lock.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/util/option.h"
#include "storage/page_store.h"
#include "tests/common/expect_fault.h"
#include "tests/storage/storage_test_util.h"

namespace strata::storage {
namespace {

using testing::ScratchDir;

PageStoreOptions Options(const std::string& dir) {
  PageStoreOptions o;
  o.dirs = {dir};
  o.page_bytes = 64 * kKiB;
  o.capacity_bytes = 16 * o.page_bytes;
  return o;
}

TEST(StoreLock, ASecondOpenInThisProcessIsRefusedNamingThePid) {
  ScratchDir dir;
  auto first = PageStore::Open(Options(dir.path()));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  auto second = PageStore::Open(Options(dir.path()));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by pid " + std::to_string(::getpid())),
            std::string::npos)
      << second.status().message();
  first->reset();
  EXPECT_TRUE(PageStore::Open(Options(dir.path())).ok()) << "the lock outlived its store";
}

// Two fresh runs on one directory: the loser gets the owner's pid and writes nothing, so the
// winner's store is created whole.
TEST(StoreLock, ANewStoreInALockedDirectoryIsRefusedBeforeAnyWrite) {
  ScratchDir dir;
  auto lock = StoreLock::Acquire({dir.path()});
  ASSERT_TRUE(lock.ok()) << lock.status().to_string();
  auto store = PageStore::Open(Options(dir.path()));
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("is in use by pid"), std::string::npos)
      << store.status().message();
  test_support::ExpectFault(store.status(), Option::kNvmeDir, {{"pid", int64_t{::getpid()}}});
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/strata.slots.new"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/strata.catalog.new"));
}

TEST(StoreLock, AKilledOwnerLeavesNoStaleLock) {
  ScratchDir dir;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto lock = StoreLock::Acquire({dir.path()});
    const char c = lock.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  auto held = StoreLock::Acquire({dir.path()});
  ASSERT_FALSE(held.ok());
  EXPECT_NE(held.status().message().find("in use by pid " + std::to_string(child)),
            std::string::npos)
      << held.status().message();
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_TRUE(StoreLock::Acquire({dir.path()}).ok()) << "a SIGKILLed owner left its lock";
}

TEST(StoreLock, ReleasingRemovesTheOwnerLabel) {
  ScratchDir dir;
  {
    auto lock = StoreLock::Acquire({dir.path()});
    ASSERT_TRUE(lock.ok());
    EXPECT_TRUE(std::filesystem::exists(StoreLock::LabelPathFor(dir.path())));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace strata::storage
