// core/util/status.h: one detail mechanism for every kind of fact a layer attaches
// (WithDetail / DetailOf), kept through the edges' rewording.
#include "core/util/status.h"

#include <gtest/gtest.h>

#include <string>

namespace strata {
namespace {

struct Facts {
  int got = 0;
  std::string where;
};
struct OtherFacts {
  int got = 0;
};

TEST(Status, ADetailIsReadBackByItsTypeOnly) {
  const Status s = WithDetail(Status::InvalidArgument("bad"), Facts{7, "here"});
  ASSERT_NE(DetailOf<Facts>(s), nullptr);
  EXPECT_EQ(DetailOf<Facts>(s)->got, 7);
  EXPECT_EQ(DetailOf<Facts>(s)->where, "here");
  EXPECT_EQ(DetailOf<OtherFacts>(s), nullptr);
  EXPECT_EQ(DetailOf<Facts>(Status::InvalidArgument("bad")), nullptr);
  // A second detail replaces the first: a Status carries one.
  const Status t = WithDetail(s, OtherFacts{3});
  EXPECT_EQ(DetailOf<Facts>(t), nullptr);
  EXPECT_EQ(DetailOf<OtherFacts>(t)->got, 3);
}

TEST(Status, OkCarriesNoDetail) {
  const Status s = WithDetail(Status::Ok(), Facts{7, "here"});
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(DetailOf<Facts>(s), nullptr);
}

TEST(Status, TheDetailSurvivesContextAndRewording) {
  const Status s = WithDetail(Status::ResourceExhausted("{nvme_mem} too small"), Facts{7, "x"});
  const Status c = s.with_context("open");
  EXPECT_EQ(c.message(), "open: {nvme_mem} too small");
  ASSERT_NE(DetailOf<Facts>(c), nullptr);
  EXPECT_EQ(DetailOf<Facts>(c)->got, 7);
  const Status w = s.with_message("--nvme-mem too small");
  EXPECT_EQ(w.message(), "--nvme-mem too small");
  EXPECT_EQ(w.code(), StatusCode::kResourceExhausted);
  ASSERT_NE(DetailOf<Facts>(w), nullptr);
  EXPECT_EQ(DetailOf<Facts>(w)->where, "x");
  EXPECT_TRUE(Status::Ok().with_message("words").ok());
}

}  // namespace
}  // namespace strata
