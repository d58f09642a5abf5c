#include "stress/stress_disturbance.h"

#include <signal.h>

#include <algorithm>
#include <cmath>

namespace strata::stress {

long Uniform(std::mt19937_64& rng, long lo, long hi) {
  return std::uniform_int_distribution<long>(lo, hi)(rng);
}

namespace {

// 1..hi, log-uniform: small request numbers and byte counts as often as large ones.
uint64_t LogUniform(std::mt19937_64& rng, double hi) {
  return uint64_t(std::exp(std::uniform_real_distribution<double>(0, std::log(hi))(rng)));
}

DiskFault DrawDiskFault(std::mt19937_64& rng) {
  DiskFault f;
  switch (Uniform(rng, 0, 4)) {
    case 0:
      f.spec = "eio-after=" + std::to_string(LogUniform(rng, 3000));
      f.error_texts = {"Input/output error"};
      break;
    case 1:
      f.spec =
          "enospc-after=" + std::to_string(Uniform(rng, 0, 3) == 0 ? 0 : LogUniform(rng, 32e6));
      f.error_texts = {"No space left on device"};
      break;
    case 2:
      f.spec = "eagain=" + std::to_string(Uniform(rng, 1, 48));
      f.error_texts = {"Resource temporarily unavailable"};
      break;
    case 3:
      f.spec = "latency-us=" + std::to_string(Uniform(rng, 20, 400));
      f.timing_only = true;
      break;
    default:
      f.spec = "short-io";
      f.timing_only = true;
  }
  if (!f.timing_only && Uniform(rng, 0, 1) == 1) {
    f.spec += Uniform(rng, 0, 1) == 1 ? ",short-io" : ",latency-us=50";
  }
  return f;
}

int DrawSignal(std::mt19937_64& rng) { return Uniform(rng, 0, 1) ? SIGKILL : SIGTERM; }

}  // namespace

std::vector<Disturbance> DrawDisturbances(std::mt19937_64& rng, double fill_odds,
                                          double rank_change_odds) {
  std::vector<Disturbance> out(size_t(Uniform(rng, 2, 4)));
  out[0].signal = DrawSignal(rng);
  if (Uniform(rng, 0, 1) == 1) out[0].fault = DrawDiskFault(rng);
  for (size_t i = 1; i < out.size(); ++i) {
    const long kind = Uniform(rng, 0, 99);
    out[i].rot = kind >= 85;
    if (kind >= 40 && kind < 85) out[i].signal = DrawSignal(rng);
    if (kind < 40 || (kind >= 70 && kind < 85)) out[i].fault = DrawDiskFault(rng);
  }
  if (fill_odds > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < fill_odds) {
    Disturbance fill;
    fill.fill = true;
    out[0] = fill;
  }
  const bool any = std::any_of(out.begin(), out.end(),
                               [](const Disturbance& d) { return d.fault.has_value() || d.fill; });
  if (!any) out.push_back(Disturbance{false, false, false, DrawDiskFault(rng), 0});
  if (rank_change_odds > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < rank_change_odds) {
    Disturbance change;
    change.rank_change = true;
    out.insert(out.begin() + Uniform(rng, 1, long(out.size())), change);
  }
  return out;
}

}  // namespace strata::stress
