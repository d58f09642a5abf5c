#include "scheduler/checkpoint_writer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "core/nn/gpt_config.h"
#include "core/nn/gpt_layout.h"

namespace strata::scheduler {
namespace {

using memory::Role;

// A checkpoint holds the parameters and both moments of every block, the master copy only with
// --delayed-update, and never a gradient (rebuilt every step).
TEST(CheckpointWriter, DurablePagesAreParamsMomentsAndTheMasterCopy) {
  const GptLayout layout = MakeGptLayout(*GptPreset("tiny"));
  for (bool delayed : {false, true}) {
    auto pages = StatePages::Make(layout, 4096, delayed);
    ASSERT_TRUE(pages.ok()) << pages.status().to_string();
    const std::vector<memory::PageId> durable = DurablePages(*pages, layout.num_blocks(), delayed);
    const uint64_t expected =
        pages->pages_of_role(Role::kParam) + pages->pages_of_role(Role::kAdamM) +
        pages->pages_of_role(Role::kAdamV) + (delayed ? pages->pages_of_role(Role::kMaster) : 0);
    EXPECT_EQ(durable.size(), expected) << "delayed " << delayed;
    const std::set<memory::PageId> unique(durable.begin(), durable.end());
    EXPECT_EQ(unique.size(), durable.size());
    for (int b = 0; b < layout.num_blocks(); ++b) {
      for (memory::PageId p : pages->pages(b, Role::kGrad)) EXPECT_EQ(unique.count(p), 0u);
    }
  }
}

// Nothing asked for, nothing to wait on (the trainer's drain before the first checkpoint).
TEST(CheckpointWriter, WaitWithoutACheckpointIsOk) {
  CheckpointWriter writer({}, CheckpointRecord{});
  EXPECT_TRUE(writer.wait().ok());
}

}  // namespace
}  // namespace strata::scheduler
