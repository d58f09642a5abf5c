#include "stress/fault_spec.h"

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <vector>

#include "core/util/sizes.h"
#include "scheduler/train_options.h"

namespace strata::stress {
namespace {

constexpr const char* kKnownFaults =
    "eio-after=N, enospc-after=BYTES, eagain=N, latency-us=N, short-io";

Status Bad(std::string_view spec, const std::string& why) {
  return Status::InvalidArgument(std::string(kInjectFaultsVariable) + " '" + std::string(spec) +
                                 "': " + why + " (known: " + kKnownFaults +
                                 ", comma-separated)");
}

Result<uint64_t> ParseCount(std::string_view spec, std::string_view name, std::string_view text) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Bad(spec, std::string(name) + " needs a whole number, got '" + std::string(text) + "'");
  }
  return v;
}

// One `name[=value]` item.
Status ApplyItem(std::string_view spec, std::string_view item, storage::FaultInjector* faults) {
  const size_t eq = item.find('=');
  const std::string_view name = item.substr(0, eq);
  const bool has_value = eq != std::string_view::npos;
  const std::string_view value = has_value ? item.substr(eq + 1) : std::string_view();
  if (name == "short-io") {
    if (has_value) return Bad(spec, "short-io takes no value");
    faults->short_transfers(true);
    return Status::Ok();
  }
  if (!has_value) return Bad(spec, "'" + std::string(name) + "' needs =VALUE or is unknown");
  if (name == "enospc-after") {
    Result<uint64_t> bytes = ParseBytes(value, "enospc-after");
    if (!bytes.ok()) return Bad(spec, bytes.status().message());
    faults->enospc_after_bytes(*bytes);
    return Status::Ok();
  }
  STRATA_ASSIGN_OR_RETURN(const uint64_t n, ParseCount(spec, name, value));
  if (name == "eio-after") {
    if (n == 0) return Bad(spec, "eio-after counts requests from 1");
    faults->fail_nth_request(n, EIO);
  } else if (name == "eagain") {
    faults->eagain_next_requests(n);
  } else if (name == "latency-us") {
    faults->set_latency_ns(n * 1000);
  } else {
    return Bad(spec, "unknown fault '" + std::string(name) + "'");
  }
  return Status::Ok();
}

}  // namespace

Status ParseFaultSpec(std::string_view spec, storage::FaultInjector* faults) {
  if (spec.empty()) return Bad(spec, "empty");
  std::vector<std::string_view> items;
  for (size_t pos = 0;;) {
    const size_t comma = spec.find(',', pos);
    items.push_back(spec.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  // Everything is checked on a scratch injector first, so that a bad item arms nothing.
  storage::FaultInjector scratch;
  for (std::string_view item : items) {
    if (item.empty()) return Bad(spec, "an empty item");
    STRATA_RETURN_IF_ERROR(ApplyItem(spec, item, &scratch));
  }
  for (std::string_view item : items) STRATA_RETURN_IF_ERROR(ApplyItem(spec, item, faults));
  return Status::Ok();
}

InjectedFaults::~InjectedFaults() {
  if (!armed_) return;
  std::fprintf(stderr, "strata: inject-faults: %" PRIu64 " requests failed\n",
               injector_.injected());
}

Status InjectedFaults::arm(std::string_view spec, TrainOptions* options) {
  if (spec.empty()) return Status::Ok();
  STRATA_RETURN_IF_ERROR(ParseFaultSpec(spec, &injector_));
  armed_ = true;
  options->nvme_faults = &injector_;
  return Status::Ok();
}

}  // namespace strata::stress
