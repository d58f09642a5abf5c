// `strata bench parallel`, measurement 1: the collectives worker under mpirun, its timings turned
// into rates and Strata/MPI ratios (bench/bench_parallel.h, bench/bench_parallel_worker.cc).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/util/sizes.h"
#include "bench/bench_parallel.h"

namespace strata::bench::parallel_bench {
namespace {

constexpr uint64_t kMaxSizeBytes = 1ull << 30;

// The last line of `out` that starts with '{', parsed; Internal when there is none.
Result<nlohmann::json> LastJsonLine(const std::string& out, const std::string& what) {
  size_t at = std::string::npos;
  for (size_t pos = 0; pos < out.size();) {
    if (out[pos] == '{') at = pos;
    const size_t nl = out.find('\n', pos);
    pos = nl == std::string::npos ? out.size() : nl + 1;
  }
  if (at != std::string::npos) {
    const size_t nl = out.find('\n', at);
    nlohmann::json j = nlohmann::json::parse(out.substr(at, nl - at), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
  }
  return Status::Internal("bench parallel: " + what +
                          " printed no JSON object on stdout; got: " + out.substr(0, 2000));
}

CollectiveSample Sample(const nlohmann::json& size, const char* op) {
  CollectiveSample s;
  s.op = op;
  s.bytes = size.at("bytes").get<uint64_t>();
  s.outputs_equal = size.at("outputs_equal").get<bool>();
  s.strata_s = Median(size.at(op).at("strata_s").get<std::vector<double>>());
  s.mpi_s = Median(size.at(op).at("mpi_s").get<std::vector<double>>());
  s.strata_bytes_per_s = s.strata_s > 0 ? double(s.bytes) / s.strata_s : 0;
  s.mpi_bytes_per_s = s.mpi_s > 0 ? double(s.bytes) / s.mpi_s : 0;
  s.ratio = s.mpi_bytes_per_s > 0 ? s.strata_bytes_per_s / s.mpi_bytes_per_s : 0;
  return s;
}

// Note [Collective efficiency]: the median of the ratios of the sizes >= kEfficiencyMinBytes
// (of every size when none is that large, as in a quick run), per op and over both ops pooled.
void SetEfficiency(CollectivesResult& r) {
  uint64_t largest = 0;
  for (const CollectiveSample& s : r.samples) largest = std::max(largest, s.bytes);
  const uint64_t floor = largest >= kEfficiencyMinBytes ? kEfficiencyMinBytes : 0;
  std::vector<double> ag, rs;
  for (const CollectiveSample& s : r.samples) {
    if (s.bytes < floor) continue;
    (s.op == "all_gather" ? ag : rs).push_back(s.ratio);
    if (s.op == "all_gather") r.efficiency_sizes.push_back(s.bytes);
  }
  r.all_gather = Median(ag);
  r.reduce_scatter = Median(rs);
  // Both ops must meet the target: the weaker one is the figure (a median pooled over the two
  // would sit between them and hide a slow one).
  r.efficiency = std::min(r.all_gather, r.reduce_scatter);
}

Result<CollectivesResult> ParseWorker(const std::string& out) {
  STRATA_ASSIGN_OR_RETURN(const nlohmann::json j, LastJsonLine(out, "the collectives worker"));
  CollectivesResult r;
  try {
    r.thread_level = j.at("thread_level").get<std::string>();
    for (const nlohmann::json& size : j.at("sizes")) {
      r.samples.push_back(Sample(size, "all_gather"));
      r.samples.push_back(Sample(size, "reduce_scatter"));
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::Internal(std::string("bench parallel: the collectives worker's JSON lacks a "
                                        "field (") +
                            e.what() + "): " + out.substr(0, 2000));
  }
  SetEfficiency(r);
  return r;
}

}  // namespace

Result<std::vector<uint64_t>> ParseSizes(const std::vector<std::string>& sizes) {
  if (sizes.empty()) {
    return Status::InvalidArgument("--sizes: give at least one size, e.g. --sizes 1M,4M,16M");
  }
  std::vector<uint64_t> bytes;
  for (const std::string& text : sizes) {
    STRATA_ASSIGN_OR_RETURN(const uint64_t v, ParseBytes(text, "--sizes"));
    if (v == 0 || v % (sizeof(float) * kRanks) != 0 || v > kMaxSizeBytes) {
      return Status::InvalidArgument(
          "--sizes: '" + text + "' must be a positive multiple of " +
          std::to_string(sizeof(float) * kRanks) +
          " bytes (a whole number of floats on each of the ranks) and at most 1G");
    }
    bytes.push_back(v);
  }
  return bytes;
}

Result<CollectivesResult> MeasureCollectives(const Flags& f, const std::string& self,
                                             const std::string& mpirun, const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(const std::vector<uint64_t> sizes, ParseSizes(f.sizes));
  std::vector<std::string> argv = MpirunPrefix(mpirun, f.timeout_s, kRanks);
  std::string size_list;
  for (const uint64_t b : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(b);
  argv.insert(argv.end(), {self, "bench", "parallel-worker", "collectives", "--sizes", size_list,
                           "--rounds", std::to_string(f.collective_rounds), "--comm-timeout",
                           std::to_string(long(f.timeout_s))});
  const std::string command = DisplayCommand(argv, self, mpirun, dir);
  std::fprintf(stderr, "bench parallel: collectives: %s\n", command.c_str());
  STRATA_ASSIGN_OR_RETURN(const ChildResult child,
                          RunChild(argv, dir, "collectives", f.timeout_s + 30));
  if (child.exit_code != 0)
    return ChildFailed("the collectives worker (" + command + ")", child, f.timeout_s);
  STRATA_ASSIGN_OR_RETURN(CollectivesResult r, ParseWorker(child.out));
  r.command = command;
  return r;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace strata::bench::parallel_bench
