#include "scheduler/trace.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/util/option.h"

namespace strata::scheduler {
namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Union of intervals, sorted and merged.
std::vector<std::pair<int64_t, int64_t>> Merge(std::vector<std::pair<int64_t, int64_t>> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

}  // namespace

const char* QueueName(Queue queue) {
  switch (queue) {
    case Queue::kCompute:
      return "compute";
    case Queue::kH2D:
      return "h2d";
    case Queue::kD2H:
      return "d2h";
    case Queue::kFetch:
      return "fetch (host pages, nvme)";
    case Queue::kOptimizerIo:
      return "optimizer io (host pages, nvme)";
    case Queue::kOptimizer:
      return "optimizer (host AdamW)";
    case Queue::kD2HFirst:
      return "d2h (embedding gradient)";
    case Queue::kRefresh:
      return "h2d (refresh after update)";
    case Queue::kComm:
      return "comm (collectives over the ranks)";
  }
  return "?";
}

Timeline::Timeline() : origin_ns_(SteadyNs()) {}

int64_t Timeline::now_ns() const { return SteadyNs() - origin_ns_; }

void Timeline::add(Slice slice) {
  std::lock_guard lock(mu_);
  slices_.push_back(std::move(slice));
}

double Timeline::overlap(int64_t t0, int64_t t1) const {
  if (t1 <= t0) return 0.0;
  std::vector<std::pair<int64_t, int64_t>> compute, moving;
  {
    std::lock_guard lock(mu_);
    for (const Slice& s : slices_) {
      const int64_t a = std::max(s.start_ns, t0), b = std::min(s.end_ns, t1);
      if (b <= a) continue;
      if (s.queue == Queue::kCompute) {
        compute.emplace_back(a, b);
      } else if (s.queue != Queue::kOptimizer) {
        moving.emplace_back(a, b);
      }
    }
  }
  const auto c = Merge(std::move(compute)), m = Merge(std::move(moving));
  int64_t both = 0;
  size_t j = 0;
  for (const auto& [a, b] : c) {
    while (j < m.size() && m[j].second <= a) ++j;
    for (size_t k = j; k < m.size() && m[k].first < b; ++k) {
      both += std::min(b, m[k].second) - std::max(a, m[k].first);
    }
  }
  return double(both) / double(t1 - t0);
}

void Timeline::forget(int64_t before_ns) {
  if (keep_all_) return;
  std::lock_guard lock(mu_);
  std::erase_if(slices_, [&](const Slice& s) { return s.end_ns < before_ns; });
}

Status Timeline::write_chrome_trace(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  for (int q = 0; q < kNumQueues; ++q) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", q},
                      {"args", {{"name", QueueName(Queue(q))}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", q},
                      {"args", {{"sort_index", q}}}});
  }
  {
    std::lock_guard lock(mu_);
    for (const Slice& s : slices_) {
      events.push_back({{"name", s.name},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", static_cast<int>(s.queue)},
                        {"ts", double(s.start_ns) / 1e3},
                        {"dur", double(s.end_ns - s.start_ns) / 1e3},
                        {"args", {{"bytes", s.bytes}, {"step", s.step}}}});
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      return AtFault(Option::kTrace,
                     Status::FromErrno(
                         errno, Mention(Option::kTrace) + ": cannot open " + tmp + " for writing"));
    }
    out << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() << "\n";
    if (!out) {
      return AtFault(Option::kTrace,
                     Status::FromErrno(errno, Mention(Option::kTrace) + ": writing " + tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return AtFault(
        Option::kTrace,
        Status::FromErrno(errno, Mention(Option::kTrace) + ": renaming " + tmp + " to " + path));
  }
  return Status::Ok();
}

}  // namespace strata::scheduler
