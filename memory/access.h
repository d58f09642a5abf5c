// Access: what a caller will do with a page it pins (MemoryManager::acquire).
#pragma once

#include <cstdint>

namespace strata::memory {

enum class Access : uint8_t {
  kRead,       // contents are loaded; the caller must not modify them
  kWrite,      // contents are loaded; the caller modifies them (the NVMe copy becomes stale)
  kOverwrite,  // the caller overwrites every byte; nothing is loaded (contents undefined)
};

}  // namespace strata::memory
