#include "memory/page_plan.h"

#include <gtest/gtest.h>

#include "memory/page_plan_layout.h"
#include "models/gpt2/gpt_config.h"
#include "models/gpt2/gpt_layout.h"

namespace strata::memory {
namespace {

constexpr uint64_t kPage = 4096;

PagePlanOptions Opts() {
  PagePlanOptions o;
  o.page_bytes = kPage;
  return o;
}

TEST(PagePlanTest, PacksTensorsOfOneBlockAndRole) {
  std::vector<TensorEntry> t = {{0, Role::kParam, "a", 100},
                                {0, Role::kParam, "b", 200},
                                {0, Role::kGrad, "a.grad", 100},
                                {1, Role::kParam, "c", 10}};
  auto plan = MakePagePlan(t, Opts());
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->num_pages(), 3u);
  EXPECT_EQ(plan->pages[0].block, 0);
  EXPECT_EQ(plan->pages[0].role, Role::kParam);
  EXPECT_EQ(plan->pages[1].role, Role::kGrad);
  EXPECT_EQ(plan->pages[2].block, 1);
  auto b = plan->spans_of(1);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].page, 0u);
  EXPECT_EQ(b[0].page_offset_bytes, 448u);  // 400 rounded up to 64
  EXPECT_EQ(plan->tensor_bytes(), (100 + 200 + 100 + 10) * 4u);
  EXPECT_EQ(plan->padding_bytes(), 3 * kPage - plan->tensor_bytes());
  EXPECT_NEAR(plan->waste_fraction(), double(plan->padding_bytes()) / (3 * kPage), 1e-12);
  EXPECT_EQ(plan->pages_of(0, Role::kParam), std::vector<PageId>{0});
  EXPECT_TRUE(plan->find("c").ok());
  EXPECT_FALSE(plan->find("nope").ok());
}

TEST(PagePlanTest, SmallTensorNeverStraddlesAPage) {
  // 3000 + 3000 bytes: the second does not fit after the first and starts a new page.
  std::vector<TensorEntry> t = {{0, Role::kParam, "a", 750}, {0, Role::kParam, "b", 750}};
  auto plan = MakePagePlan(t, Opts());
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->num_pages(), 2u);
  EXPECT_EQ(plan->spans_of(1)[0].page, 1u);
  EXPECT_EQ(plan->spans_of(1)[0].page_offset_bytes, 0u);
}

TEST(PagePlanTest, LargeTensorSpansConsecutivePages) {
  std::vector<TensorEntry> t = {{2, Role::kAdamM, "small", 16}, {2, Role::kAdamM, "big", 3000}};
  auto plan = MakePagePlan(t, Opts());
  ASSERT_TRUE(plan.ok());
  auto spans = plan->spans_of(1);
  ASSERT_EQ(spans.size(), 3u);  // 12000 bytes starting at 64: 4032 + 4096 + 3872
  uint64_t total = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].page, spans[0].page + i);
    EXPECT_EQ(spans[i].tensor_offset_bytes, total);
    total += spans[i].bytes;
  }
  EXPECT_EQ(total, 12000u);
  EXPECT_EQ(spans[0].page_offset_bytes, 64u);
  for (const PageInfo& p : plan->pages) EXPECT_LE(p.used_bytes, kPage);
}

// strata.torch sizes pages a little above a model's largest tensor (python/strata/_layout.py):
// a multiple of 4 KiB that is no power of two packs and spans as any other.
TEST(PagePlanTest, APageNeedNotBeAPowerOfTwo) {
  PagePlanOptions o = Opts();
  o.page_bytes = 3 * kPage;  // 12 KiB
  std::vector<TensorEntry> t = {{0, Role::kParam, "a", 3000},   // 12000 bytes: fills page 0
                                {0, Role::kParam, "b", 750},    // 3000: no room, page 1
                                {0, Role::kParam, "c", 5000}};  // 20000: on from b, spans 1-2
  auto plan = MakePagePlan(t, o);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->num_pages(), 3u);
  EXPECT_EQ(plan->spans_of(0)[0].page, 0u);
  EXPECT_EQ(plan->spans_of(1)[0].page, 1u);
  EXPECT_EQ(plan->spans_of(1)[0].page_offset_bytes, 0u);
  const auto c = plan->spans_of(2);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].page, 1u);
  EXPECT_EQ(c[0].page_offset_bytes, 3008u);  // b's 3000 bytes, aligned to 64
  EXPECT_EQ(c[0].bytes, 3 * kPage - 3008);
  EXPECT_EQ(c[1].page, 2u);
  EXPECT_EQ(c[1].page_offset_bytes, 0u);
  EXPECT_EQ(c[0].bytes + c[1].bytes, 20000u);
  EXPECT_EQ(plan->total_bytes(), 3 * 3 * kPage);
}

TEST(PagePlanTest, RejectsBadInput) {
  std::vector<TensorEntry> t = {{0, Role::kParam, "a", 1}};
  PagePlanOptions o = Opts();
  o.page_bytes = 5000;
  auto r = MakePagePlan(t, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a multiple of 4 KiB"), std::string::npos);
  o.page_bytes = 2048;
  EXPECT_FALSE(MakePagePlan(t, o).ok());
  std::vector<TensorEntry> bad = {{0, Role::kParam, "zero", 0}};
  auto z = MakePagePlan(bad, Opts());
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("zero"), std::string::npos);
}

TEST(PagePlanTest, GptLayoutCoversEveryTensorOnce) {
  auto config = GptPreset("small");
  ASSERT_TRUE(config.ok());
  GptLayout layout = MakeGptLayout(*config);
  std::vector<TensorEntry> entries = LayoutTensorEntries(layout);
  PagePlanOptions o;
  o.page_bytes = 1 * kMiB;
  auto plan = MakePagePlan(entries, o);
  ASSERT_TRUE(plan.ok());
  uint64_t params = 0;
  for (const TensorEntry& e : entries) {
    if (e.role == Role::kParam) params += e.numel;
  }
  EXPECT_EQ(params, uint64_t(config->num_params()));
  EXPECT_EQ(plan->tensor_bytes(), 4 * params * 4);  // param, grad, adam_m, adam_v
  // Every page holds one (block, role) and the bytes of its spans equal its used bytes.
  std::vector<uint64_t> used(plan->num_pages(), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    for (const TensorSpan& s : plan->spans_of(i)) {
      EXPECT_EQ(plan->pages[s.page].block, entries[i].block);
      EXPECT_EQ(plan->pages[s.page].role, entries[i].role);
      EXPECT_LE(s.page_offset_bytes + s.bytes, o.page_bytes);
      used[s.page] += s.bytes;
    }
  }
  for (PageId p = 0; p < plan->num_pages(); ++p) EXPECT_EQ(used[p], plan->pages[p].used_bytes);
  EXPECT_LT(plan->waste_fraction(), 0.5);
}

}  // namespace
}  // namespace strata::memory
