// Safetensors files: weights and gradients that other frameworks (PyTorch, Hugging Face) read.
//
// Format (https://github.com/huggingface/safetensors):
//   [8 bytes] N, little-endian uint64: the length of the JSON header
//   [N bytes] JSON: {"<name>": {"dtype": "F32", "shape": [d0, d1, ...],
//                               "data_offsets": [begin, end]}, ...,
//                    "__metadata__": {"<key>": "<value>", ...}}
//   [rest]    tensor data, little-endian, row-major; offsets are relative to the start of this
//             section, and the tensors tile it exactly (no gaps, no overlap).
//
// Writing (WriteSafetensors):
// - every tensor is written as F32; the data section holds the tensors sorted by name (the
//   order the reference implementation uses for same-dtype tensors), so the input order does
//   not matter;
// - the header is compact JSON with sorted keys, padded with spaces to a multiple of 8 bytes:
//   the same tensors and metadata always give the same bytes (exports can be compared with cmp);
// - the file appears atomically: bytes go to "<path>.tmp.<pid>" in the same directory, which is
//   fsync'd and renamed over `path` (and the directory fsync'd). On any error the temporary file
//   is removed and an existing file at `path` is left untouched.
//
// Reading (ReadSafetensors): F32, F16 and BF16 tensors, converted to float. Every structural
// problem (header length, JSON, missing or malformed fields, offsets outside the data section,
// a byte count that does not match the shape and dtype, gaps or overlaps) is Corruption naming
// the file and, where there is one, the tensor. A dtype Strata cannot convert (F64, I64, ...)
// is NotSupported; a dtype string that is not in the format at all is Corruption.
//
// Thread safety: free functions without shared state; concurrent calls on different paths are
// fine. The machine is assumed little-endian (x86-64, aarch64).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/util/status.h"

namespace strata {

// A tensor to write: `data` points at product(shape) floats (row-major) owned by the caller,
// valid for the duration of the call. An empty shape is a scalar (one float).
struct TensorView {
  std::string name;
  std::vector<int64_t> shape;
  const float* data = nullptr;
};

// A tensor read back, converted to float.
struct SafetensorsTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;  // product(shape) values, row-major
  std::string dtype;        // the dtype stored in the file: "F32", "F16" or "BF16"
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;       // "__metadata__", empty if absent
  std::map<std::string, SafetensorsTensor> tensors;  // by name
};

// Writes `tensors` as F32 plus `metadata` to `path` (see the contract above). Errors:
// InvalidArgument for an empty or duplicate tensor name, the reserved name "__metadata__", a
// negative dimension, or metadata that is not valid UTF-8; OS errors (FromErrno) naming the
// file and offset, e.g. ResourceExhausted when the disk is full. A null `data` with a non-zero
// element count is a caller bug (STRATA_CHECK).
[[nodiscard]] Status WriteSafetensors(const std::string& path,
                                      const std::vector<TensorView>& tensors,
                                      const std::map<std::string, std::string>& metadata);

// WriteSafetensors tensor by tensor, for weights that are never whole in memory: Create lays the
// file out from the tensors' names and shapes (their `data` is not read) and sizes it, write()
// puts one tensor's floats at its place, in any order, commit() makes the file appear (fsync,
// rename, as above). A writer destroyed before commit() removes its temporary file and leaves
// `path` untouched. Errors are WriteSafetensors'; writing a tensor not in the layout, or
// committing before every tensor is written, is a caller bug (STRATA_CHECK).
class SafetensorsWriter {
 public:
  [[nodiscard]] static Result<SafetensorsWriter> Create(
      const std::string& path, const std::vector<TensorView>& tensors,
      const std::map<std::string, std::string>& metadata);
  SafetensorsWriter(SafetensorsWriter&&) noexcept;
  SafetensorsWriter& operator=(SafetensorsWriter&&) noexcept;
  ~SafetensorsWriter();

  [[nodiscard]] Status write(const std::string& name, const float* data);
  [[nodiscard]] Status commit();

 private:
  struct State;
  explicit SafetensorsWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

// Reads the whole file at `path`. NotFound if it does not exist; Corruption / NotSupported as
// described above; OS errors via FromErrno.
Result<SafetensorsFile> ReadSafetensors(const std::string& path);

// The parsers under ReadSafetensors, on bytes in memory (tests/fuzz/ fuzzes them). None reads
// outside the bytes it is given, and none allocates more than in proportion to them: every
// tensor's element count is checked against the bytes its data_offsets hold, and those against
// the data section. `path` names the file in messages; the errors are ReadSafetensors'.

// One tensor as the header describes it, validated: its dtype, shape and byte range
// [begin, end) in the data section (offsets relative to the section's start).
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16" or "BF16"
  std::vector<int64_t> shape;
  uint64_t numel = 1;  // product(shape); (end - begin) == numel * the dtype's size
  uint64_t begin = 0;
  uint64_t end = 0;
};

struct SafetensorsHeader {
  std::map<std::string, std::string> metadata;  // "__metadata__", empty if absent
  std::vector<SafetensorsEntry> entries;         // in the header's key order
};

// The JSON header's length, from the file's first bytes (`first_bytes` holds
// min(8, file_bytes) of them), checked against the file's size and the 100 MB limit.
Result<uint64_t> ParseSafetensorsHeaderLength(std::string_view first_bytes, uint64_t file_bytes,
                                              const std::string& path);

// The JSON header `text` of a file whose data section has `data_bytes` bytes: every entry is
// checked, and the tensors must tile the data section exactly.
Result<SafetensorsHeader> ParseSafetensorsHeader(std::string_view text, uint64_t data_bytes,
                                                 const std::string& path);

// A whole safetensors file held in memory: what ReadSafetensors returns for the same bytes.
Result<SafetensorsFile> ParseSafetensors(std::string_view file, const std::string& path);

// What WriteSafetensors writes before the data section: the 8-byte length and the padded JSON
// header. The data section that follows holds each tensor's floats, tensors in name order.
// Errors: WriteSafetensors' InvalidArgument cases.
Result<std::string> EncodeSafetensorsHeader(const std::vector<TensorView>& tensors,
                                            const std::map<std::string, std::string>& metadata,
                                            const std::string& path);

// IEEE half and bfloat16 bit patterns to float (exact; NaN and infinities preserved).
float HalfToFloat(uint16_t bits);
float Bfloat16ToFloat(uint16_t bits);

}  // namespace strata
