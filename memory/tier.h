// Tier: the three places a page of model state can live. One enum for the whole project: the
// memory manager's pools and budgets, the scheduler's placement of each kind of state, the
// budget shortfalls tools/ words as flags.
//
// Device residency is not the memory manager's (Note [Device residency] in memory_manager.h):
// the scheduler keeps block slots in the Device arena; the manager holds the host pool and the
// NVMe tier.
#pragma once

#include <cstdint>

namespace strata::memory {

enum class Tier : uint8_t { kDevice = 0, kHost = 1, kNvme = 2 };
inline constexpr int kNumTiers = 3;
// "device", "host", "nvme".
const char* TierName(Tier tier);

}  // namespace strata::memory
