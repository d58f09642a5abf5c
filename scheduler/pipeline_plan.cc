#include "scheduler/pipeline_plan.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/util/check.h"
#include "core/util/option.h"

namespace strata::scheduler {

Result<PipeSchedule> ParsePipeSchedule(const std::string& text) {
  if (text == "gpipe") return PipeSchedule::kGPipe;
  if (text == "1f1b") return PipeSchedule::k1F1B;
  return AtFault(Option::kSchedule,
                 Status::InvalidArgument(Mention(Option::kSchedule) +
                                         " must be gpipe or 1f1b, got '" + text + "'"));
}

std::vector<PipeStep> StageSchedule(PipeSchedule schedule, int stages, int stage,
                                    int micro_batches) {
  STRATA_CHECK(stages >= 1 && stage >= 0 && stage < stages && micro_batches >= 1);
  const int m = micro_batches;
  const int warmup = schedule == PipeSchedule::kGPipe ? m : std::min(stages - stage - 1, m);
  std::vector<PipeStep> steps;
  int f = 0, b = 0;
  for (; f < warmup; ++f) steps.push_back({true, f});
  while (f < m) {  // steady state: one forward, one backward
    steps.push_back({true, f++});
    steps.push_back({false, b++});
  }
  while (b < m) steps.push_back({false, b++});
  return steps;
}

int PeakInFlight(const std::vector<PipeStep>& steps) {
  int live = 0, peak = 0;
  for (const PipeStep& s : steps) {
    live += s.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

std::vector<double> StageTimes(const std::vector<int>& counts, const StageCosts& costs) {
  std::vector<double> times;
  size_t block = 0;
  for (size_t s = 0; s < counts.size(); ++s) {
    double t = s == 0 ? costs.embedding : 0.0;
    if (s + 1 == counts.size()) t += costs.head;
    for (int i = 0; i < counts[s]; ++i) t += costs.blocks[block++];
    times.push_back(t);
  }
  return times;
}

namespace {

Status BadPartition(const std::string& text, int stages, int layers) {
  return AtFault(
      Option::kPpPartition,
      Status::InvalidArgument(Mention(Option::kPpPartition) + " must be uniform, auto or " +
                              std::to_string(stages) + " positive block counts (one per stage of " +
                              Mention(Option::kPp) + " " + std::to_string(stages) +
                              ") adding up to the model's " + std::to_string(layers) +
                              " blocks, got '" + text + "'"),
      {{"stages", stages}, {"blocks", layers}});
}

// The counts of "N0,N1,...", or empty when the text is not such a list.
std::vector<int> ParseCounts(const std::string& text) {
  std::vector<int> counts;
  for (size_t at = 0; at <= text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    int n = 0;
    const auto [last, ec] = std::from_chars(text.data() + at, text.data() + end, n);
    if (ec != std::errc() || last != text.data() + end || n < 1) return {};
    counts.push_back(n);
    at = end + 1;
  }
  return counts;
}

// Note [Stage partition]: best[k][j] is the least slowest-stage time of blocks [0, j) cut into
// k stages; a stage's time is its blocks' plus the embedding (first stage) and head (last).
std::vector<int> BalancedCounts(int stages, int layers, const StageCosts& costs) {
  STRATA_CHECK_EQ(int(costs.blocks.size()), layers);
  std::vector<double> prefix(size_t(layers) + 1, 0.0);
  for (int i = 0; i < layers; ++i) prefix[i + 1] = prefix[i] + costs.blocks[i];
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(size_t(stages) + 1,
                                        std::vector<double>(size_t(layers) + 1, kInf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(size_t(layers) + 1, 0));
  best[0][0] = 0.0;
  for (int k = 1; k <= stages; ++k) {
    for (int j = k; j <= layers; ++j) {
      if (k == stages && j != layers) continue;  // the last stage ends at the last block
      for (int i = k - 1; i < j; ++i) {
        double t = prefix[j] - prefix[i] + (k == 1 ? costs.embedding : 0.0) +
                   (k == stages ? costs.head : 0.0);
        t = std::max(t, best[k - 1][i]);
        if (t < best[k][j]) {
          best[k][j] = t;
          cut[k][j] = i;
        }
      }
    }
  }
  std::vector<int> counts(static_cast<size_t>(stages));
  for (int k = stages, j = layers; k >= 1; --k) {
    counts[k - 1] = j - cut[k][j];
    j = cut[k][j];
  }
  return counts;
}

}  // namespace

Result<std::vector<int>> PartitionStages(const std::string& text, int stages, int layers,
                                         const StageCosts& costs) {
  if (stages < 1 || stages > layers) {
    return AtFault(
        Option::kPp,
        Status::InvalidArgument(Mention(Option::kPp) + " " + std::to_string(stages) +
                                " asks for more pipeline stages than the model's " +
                                std::to_string(layers) + " blocks: give " + Mention(Option::kPp) +
                                " " + std::to_string(layers) + " or fewer"),
        {{"got", stages}, {"blocks", layers}});
  }
  if (text == "uniform") {
    std::vector<int> counts(size_t(stages), layers / stages);
    for (int s = 0; s < layers % stages; ++s) ++counts[s];
    return counts;
  }
  if (text == "auto") return BalancedCounts(stages, layers, costs);
  std::vector<int> counts = ParseCounts(text);
  int sum = 0;
  for (int n : counts) sum += n;
  if (int(counts.size()) != stages || sum != layers) return BadPartition(text, stages, layers);
  return counts;
}

}  // namespace strata::scheduler
