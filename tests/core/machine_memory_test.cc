// ReadMachineMemory: the limit is the tightest of what it reads, and never above the RAM.
#include "core/util/machine_memory.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>

namespace strata {
namespace {

TEST(MachineMemory, LimitIsAtMostThePhysicalMemory) {
  const MachineMemory m = ReadMachineMemory();
  ASSERT_GT(m.physical_bytes, 0u) << "no /proc/meminfo and no sysconf(_SC_PHYS_PAGES)";
  EXPECT_LE(m.limit_bytes, m.physical_bytes);
  EXPECT_FALSE(m.limit_source.empty());
}

TEST(MachineMemory, AnAddressSpaceLimitIsSeen) {
  struct rlimit old;
  ASSERT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
  const MachineMemory before = ReadMachineMemory();
  // Half the current limit: what is mapped already counts against it, so the limit read back
  // is below it. Restored before any assertion.
  struct rlimit lowered = old;
  lowered.rlim_cur = before.limit_bytes / 2;
  if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lowered.rlim_cur) GTEST_SKIP();
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &lowered), 0);
  const MachineMemory m = ReadMachineMemory();
  ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);
  EXPECT_EQ(m.limit_source, "ulimit -v");
  EXPECT_LT(m.limit_bytes, lowered.rlim_cur);
}

}  // namespace
}  // namespace strata
