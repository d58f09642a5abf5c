// DetectLaunch (comm.h): the launcher's environment variables, read without starting MPI, so
// that a trainer can choose its backend and name its log lines before any Comm exists.
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "parallel/comm.h"

namespace strata::parallel {
namespace {

// The value of the first variable in `names` that is set, parsed as a whole non-negative int.
// nullopt when none is set; -1 when the first one set does not parse.
std::optional<int> FirstInt(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* text = std::getenv(name);
    if (text == nullptr) continue;
    int value = -1;
    const char* end = text + std::strlen(text);
    auto [ptr, ec] = std::from_chars(text, end, value);
    if (ec != std::errc() || ptr != end || ptr == text || value < 0) return -1;
    return value;
  }
  return std::nullopt;
}

}  // namespace

LaunchInfo DetectLaunch() {
  const std::optional<int> rank = FirstInt({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"});
  const std::optional<int> size = FirstInt({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"});
  if (!rank || *rank < 0) return LaunchInfo{};
  if (!size) return LaunchInfo{.rank = *rank, .size = 0, .under_mpi = true};
  if (*size < 1 || *rank >= *size) return LaunchInfo{};
  return LaunchInfo{.rank = *rank, .size = *size, .under_mpi = true};
}

}  // namespace strata::parallel
