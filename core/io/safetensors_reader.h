// Reading a safetensors file tensor by tensor, or a tensor's element range at a time, without
// holding the file: a model larger than memory is read page by page (`--init` of a 7B model).
// The header is parsed and checked when the file is opened (the same checks and errors as
// ReadSafetensors, safetensors.h); reads then pread the bytes asked for and widen F16 and BF16
// to float.
//
// Thread safety: after Open, read() may be called from several threads at once (pread on one
// descriptor).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/io/safetensors.h"
#include "core/util/status.h"

namespace strata {

class SafetensorsReader {
 public:
  // NotFound if `path` does not exist; InvalidArgument for a directory; Corruption /
  // NotSupported for a header ReadSafetensors refuses; OS errors via FromErrno.
  static Result<SafetensorsReader> Open(const std::string& path);

  SafetensorsReader(SafetensorsReader&&) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&&) noexcept;
  ~SafetensorsReader();

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  // The entry named `name`, or nullptr.
  const SafetensorsEntry* find(const std::string& name) const;

  // Elements [first, first + count) of `entry` (one of header()'s), row-major, as floats into
  // `out`. Requires first + count <= entry.numel (checked). Corruption if the file shrank since
  // it was opened; OS errors via FromErrno naming the file and offset.
  [[nodiscard]] Status read(const SafetensorsEntry& entry, uint64_t first, uint64_t count,
                            float* out) const;

 private:
  SafetensorsReader(int fd, std::string path, SafetensorsHeader header, uint64_t data_start);

  int fd_ = -1;
  std::string path_;
  SafetensorsHeader header_;
  uint64_t data_start_ = 0;  // file offset of the data section
};

}  // namespace strata
