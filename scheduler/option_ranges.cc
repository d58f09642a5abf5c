#include "scheduler/option_ranges.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/nn/shape_limits.h"
#include "core/util/option.h"
#include "core/util/sizes.h"
#include "memory/page_plan.h"

namespace strata {
namespace {

// kNumber: a real value (--lr); kCount: a whole number (--steps); kBytes: a size (--gpu-mem). The
// whole ones are a refusal's numbers too (OptionNumbers hold integers).
enum class Unit { kNumber, kCount, kBytes };

// One numeric flag: its value and its allowed range [lo, hi], either end open.
struct Range {
  Option option;
  std::string what;  // what the value is, for the message
  double value;
  double lo;
  bool lo_open;
  double hi;
  bool hi_open;
  Unit unit = Unit::kNumber;
  // A value that means "not given: the default" (and the default, for the message), or none.
  bool has_sentinel = false;
  double sentinel = 0;
  std::string default_is = "";
};

constexpr double kMaxCount = 1e12;                // steps, warmup, checkpoint interval
constexpr double kMaxBytes = double(1ull << 50);  // 1 PiB: any size flag

std::vector<Range> RangeTable(const TrainOptions& o) {
  return {
      {Option::kBatch, "rows per step", double(o.data.batch), 1, false, 65536, false,
       Unit::kCount},
      {Option::kSeq, "tokens per row", double(o.data.seq), 1, false, kMaxBlockSize, false,
       Unit::kCount, true, 0, "min(context, 256)"},
      {Option::kSteps, "the number of steps", double(o.steps), 0, false, kMaxCount, false,
       Unit::kCount},
      {Option::kLr, "the learning rate", o.optimizer.lr, 0, true, 10, false},
      {Option::kMinLr, "the cosine schedule's floor", o.optimizer.min_lr, 0, false, 10, false,
       Unit::kNumber, true, -1, "10% of " + Mention(Option::kLr)},
      {Option::kWarmup, "warmup steps", double(o.optimizer.warmup), 0, false, kMaxCount, false,
       Unit::kCount},
      {Option::kWeightDecay, "AdamW's weight decay", o.optimizer.weight_decay, 0, false, 100,
       false},
      {Option::kBeta1, "AdamW's beta1", o.optimizer.beta1, 0, false, 1, true},
      {Option::kBeta2, "AdamW's beta2", o.optimizer.beta2, 0, false, 1, true},
      {Option::kEps, "AdamW's epsilon", o.optimizer.eps, 0, true, 1, false},
      {Option::kGradClip, "the clipping norm (0: off)", o.optimizer.grad_clip, 0, false, 1e12,
       false},
      {Option::kThreads, "the thread count (0: all cores)", double(o.threads), 0, false, 4096,
       false, Unit::kCount},
      {Option::kMicroBatch, "rows per micro-batch (0: " + Mention(Option::kBatch) + ")",
       double(o.data.micro_batch), 0, false, 65536, false, Unit::kCount},
      {Option::kCkptEvery, "steps between checkpoints (0: never)", double(o.checkpoints.every), 0,
       false, kMaxCount, false, Unit::kCount},
      {Option::kSimLinkGbps, "the sim link's rate in GB/s (0: memcpy speed)", o.sim_link_gbps, 0,
       false, 1e6, false},
      {Option::kGpuMem, "the device budget", double(o.budgets.gpu_mem), 1, false, kMaxBytes, false,
       Unit::kBytes, true, 0, "what the run needs"},
      {Option::kHostMem, "the host pool budget", double(o.budgets.host_mem), 1, false, kMaxBytes,
       false, Unit::kBytes, true, 0, "every page of state"},
      {Option::kNvmeMem, "the NVMe capacity", double(o.budgets.nvme_mem), 1, false, kMaxBytes,
       false, Unit::kBytes, true, 0, "3x the model state"},
      {Option::kPageSize, "the page size", double(o.budgets.page_bytes),
       double(memory::kMinPageBytes), false, double(kGiB), false, Unit::kBytes, true, 0, "16M"},
  };
}

std::string Number(double v, Unit unit) {
  if (unit == Unit::kBytes) return FormatBytes(uint64_t(v));
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool InRange(const Range& r) {
  // Written so that NaN is out of every range.
  const bool above_lo = r.lo_open ? r.value > r.lo : r.value >= r.lo;
  const bool below_hi = r.hi_open ? r.value < r.hi : r.value <= r.hi;
  return above_lo && below_hi;
}

Status OutOfRange(const Range& r) {
  std::string msg = Mention(r.option) + " " + Number(r.value, r.unit) +
                    " is out of range: " + r.what + " must be " + (r.lo_open ? "> " : ">= ") +
                    Number(r.lo, r.unit) + " and " + (r.hi_open ? "< " : "<= ") +
                    Number(r.hi, r.unit);
  if (r.has_sentinel) msg += "; leave " + Mention(r.option) + " out for " + r.default_is;
  // A whole-numbered range is closed at both ends: "min" and "max" are allowed values.
  OptionNumbers numbers;
  if (r.unit != Unit::kNumber) {
    // As FaultNumber: the largest int64_t stands for anything above it (a size near 2^64).
    const auto whole = [](double v) { return v >= 0x1p63 ? INT64_MAX : int64_t(v); };
    numbers = {{"got", whole(r.value)}, {"min", whole(r.lo)}, {"max", whole(r.hi)}};
  }
  return AtFault(r.option, Status::InvalidArgument(msg), std::move(numbers));
}

}  // namespace

Status CheckOptionRanges(const TrainOptions& o, const std::function<bool(Option option)>& given) {
  for (const Range& r : RangeTable(o)) {
    if (InRange(r)) continue;
    const bool is_default = r.has_sentinel && r.value == r.sentinel && !(given && given(r.option));
    if (!is_default) return OutOfRange(r);
  }
  if (o.optimizer.min_lr >= 0 && o.optimizer.min_lr > o.optimizer.lr) {
    return AtFault(
        Option::kMinLr,
        Status::InvalidArgument(Mention(Option::kMinLr) + " " +
                                Number(o.optimizer.min_lr, Unit::kNumber) + " is above " +
                                Mention(Option::kLr) + " " + Number(o.optimizer.lr, Unit::kNumber) +
                                "; the cosine schedule decays from " + Mention(Option::kLr) +
                                " down to " + Mention(Option::kMinLr)));
  }
  return Status::Ok();
}

Status CheckTokensPerStep(int batch, int seq) {
  const int64_t tokens = int64_t(batch) * seq;
  if (tokens <= kMaxTokensPerStep) return Status::Ok();
  return AtFault(
      Option::kBatch,
      Status::InvalidArgument(Mention(Option::kBatch) + " " + std::to_string(batch) + " x " +
                              Mention(Option::kSeq) + " " + std::to_string(seq) + " = " +
                              std::to_string(tokens) + " tokens per step, above the " +
                              std::to_string(kMaxTokensPerStep) + " one step may hold; lower " +
                              Mention(Option::kBatch) + " or " + Mention(Option::kSeq)),
      {{"batch", batch}, {"seq", seq}, {"max_tokens", kMaxTokensPerStep}});
}

}  // namespace strata
