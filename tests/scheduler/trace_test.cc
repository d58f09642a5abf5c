// Timeline::write_chrome_trace (scheduler/trace.h): each way the --trace file can fail to be
// written is an error at fault of {trace} (issue 32, item 2), its words unchanged.
#include "scheduler/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/util/option.h"
#include "tests/common/expect_fault.h"
#include "tests/common/scratch_dir.h"

namespace strata::scheduler {
namespace {

TEST(TraceFaults, AFileThatCannotBeOpenedIsAtFaultOfTrace) {
  test_support::ScratchDir dir("trace");
  Timeline t;
  const Status s = t.write_chrome_trace(dir.path() + "/no/such/dir/t.json");
  EXPECT_NE(s.message().find("{trace}: cannot open " + dir.path() + "/no/such/dir/t.json.tmp"),
            std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kTrace);
}

// The temporary is /dev/full: the JSON, larger than the stream's buffer, fails as it is written.
TEST(TraceFaults, AWriteThatFailsIsAtFaultOfTrace) {
  test_support::ScratchDir dir("trace");
  const std::string path = dir.path() + "/t.json";
  ASSERT_EQ(::symlink("/dev/full", (path + ".tmp").c_str()), 0);
  Timeline t;
  t.set_keep_all(true);
  for (int i = 0; i < 4096; ++i) {
    t.add({.queue = Queue::kCompute, .name = "op " + std::to_string(i), .end_ns = i + 1});
  }
  const Status s = t.write_chrome_trace(path);
  EXPECT_NE(s.message().find("{trace}: writing " + path + ".tmp"), std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kTrace);
}

TEST(TraceFaults, ARenameThatFailsIsAtFaultOfTrace) {
  test_support::ScratchDir dir("trace");
  const std::string path = dir.path() + "/t.json";
  std::filesystem::create_directories(path + "/in-the-way");  // rename(2) onto a full directory
  Timeline t;
  const Status s = t.write_chrome_trace(path);
  EXPECT_NE(s.message().find("{trace}: renaming " + path + ".tmp to " + path), std::string::npos)
      << s.to_string();
  test_support::ExpectFault(s, Option::kTrace);
}

}  // namespace
}  // namespace strata::scheduler
