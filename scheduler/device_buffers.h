// DeviceBuffers: device allocations made once at setup and freed together (RAII). The caller
// guarantees no queued work uses them when they go.
#pragma once

#include <string>
#include <vector>

#include "core/device/device.h"
#include "core/util/status.h"

namespace strata::scheduler {

class DeviceBuffers {
 public:
  explicit DeviceBuffers(Device& device) : device_(device) {}
  ~DeviceBuffers() {
    for (void* p : buffers_) device_.free(p);
  }
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;

  // ResourceExhausted (the arena's message, naming `what`) when the device refuses.
  Result<void*> alloc(uint64_t bytes, const std::string& what) {
    Result<void*> r = device_.alloc(bytes);
    if (!r.ok()) return r.status().with_context("allocating " + what);
    buffers_.push_back(*r);
    return *r;
  }

 private:
  Device& device_;
  std::vector<void*> buffers_;
};

}  // namespace strata::scheduler
