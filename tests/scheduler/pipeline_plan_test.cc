// Note [Pipeline schedules] and Note [Stage partition] in scheduler/pipeline_plan.h: each stage
// runs every micro-batch's forward and backward once, in micro-batch order; 1F1B holds at most
// P-s micro-batches on stage s, GPipe all of them; partitions are contiguous and auto balances.
#include "scheduler/pipeline_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace strata::scheduler {
namespace {

TEST(PipelineSchedule, EveryStageRunsEachMicroBatchOnceInOrder) {
  for (PipeSchedule sched : {PipeSchedule::kGPipe, PipeSchedule::k1F1B}) {
    for (int stages : {1, 2, 4}) {
      for (int m : {1, 3, 8}) {
        for (int s = 0; s < stages; ++s) {
          const std::vector<PipeStep> steps = StageSchedule(sched, stages, s, m);
          ASSERT_EQ(int(steps.size()), 2 * m);
          int next_f = 0, next_b = 0;
          for (const PipeStep& st : steps) {
            if (st.forward) {
              EXPECT_EQ(st.micro_batch, next_f++) << "forwards in micro-batch order";
            } else {
              EXPECT_EQ(st.micro_batch, next_b++) << "backwards in micro-batch order";
              EXPECT_LT(st.micro_batch, next_f) << "a backward after its forward";
            }
          }
        }
      }
    }
  }
}

TEST(PipelineSchedule, OneFOneBHoldsAtMostTheStagesLeftWhileGPipeHoldsEveryMicroBatch) {
  const int stages = 4, m = 8;
  for (int s = 0; s < stages; ++s) {
    EXPECT_EQ(PeakInFlight(StageSchedule(PipeSchedule::k1F1B, stages, s, m)), stages - s);
    EXPECT_EQ(PeakInFlight(StageSchedule(PipeSchedule::kGPipe, stages, s, m)), m);
  }
  // Stage 0 of 2 with 3 micro-batches: F0, then F1 B0, F2 B1, then B2.
  const std::vector<PipeStep> expected = {{true, 0},  {true, 1},  {false, 0},
                                          {true, 2},  {false, 1}, {false, 2}};
  EXPECT_EQ(StageSchedule(PipeSchedule::k1F1B, 2, 0, 3), expected);
  EXPECT_FALSE(ParsePipeSchedule("zigzag").ok());
  EXPECT_EQ(*ParsePipeSchedule("gpipe"), PipeSchedule::kGPipe);
}

TEST(StagePartition, UniformGivesTheRemainderToTheFirstStages) {
  EXPECT_EQ(*PartitionStages("uniform", 3, 8), (std::vector<int>{3, 3, 2}));
  EXPECT_EQ(*PartitionStages("uniform", 4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(*PartitionStages("2,5,1", 3, 8), (std::vector<int>{2, 5, 1}));
}

TEST(StagePartition, AutoMinimisesTheSlowestStageCountingTheEmbeddingAndTheHead) {
  // Equal blocks, a head as costly as 2.5 of them: the last stage takes fewer blocks (5 + 3:
  // 5 and 5.5; 4 + 4 would be 4 and 6.5, 6 + 2 6 and 4.5).
  StageCosts costs{.blocks = std::vector<double>(8, 1.0), .embedding = 0.0, .head = 2.5};
  const std::vector<int> counts = *PartitionStages("auto", 2, 8, costs);
  EXPECT_EQ(counts, (std::vector<int>{5, 3}));
  const std::vector<double> times = StageTimes(counts, costs);
  EXPECT_EQ(times, (std::vector<double>{5.0, 5.5}));
  // Against every contiguous cut of uneven blocks into 3 stages: none has a faster slowest stage.
  costs = {.blocks = {4, 1, 1, 3, 2, 2, 5, 1}, .embedding = 1.0, .head = 2.0};
  const std::vector<double> best = StageTimes(*PartitionStages("auto", 3, 8, costs), costs);
  const double auto_max = *std::max_element(best.begin(), best.end());
  for (int a = 1; a < 7; ++a) {
    for (int b = 1; a + b < 8; ++b) {
      const std::vector<double> t = StageTimes({a, b, 8 - a - b}, costs);
      EXPECT_LE(auto_max, *std::max_element(t.begin(), t.end())) << a << "," << b;
    }
  }
}

TEST(StagePartition, BadTextsAndTooManyStagesAreRefusedNamingTheFlag) {
  for (const char* bad : {"1,2", "0,8", "4,4,0", "x", "3,,5", ""}) {
    auto r = PartitionStages(bad, 2, 8);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("{pp_partition}"), std::string::npos) << bad;
  }
  auto many = PartitionStages("uniform", 9, 8);
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("{pp} 9 asks for more pipeline stages"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::scheduler
