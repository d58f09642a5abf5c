// Writing safetensors files, and reading one held in memory (the format and its contract:
// safetensors.h). The header's parser is in safetensors_header.cc, the reader of files on disk
// (ReadSafetensors, SafetensorsReader) in safetensors_reader.cc.
#include "core/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <utility>

#include "core/io/safetensors_format.h"
#include "core/util/check.h"

namespace strata {
namespace {

using nlohmann::json;
using safetensors_internal::kMetadataKey;
using safetensors_internal::HeaderShapeString;
using Entry = SafetensorsEntry;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error (close can report a deferred write error).
  Status close(const std::string& path) {
    int fd = std::exchange(fd_, -1);
    if (fd >= 0 && ::close(fd) != 0) return Status::FromErrno(errno, "close " + path);
    return Status::Ok();
  }

 private:
  int fd_;
};

// Writes all `bytes` at file offset `offset`.
Status WriteAllAt(int fd, const void* data, size_t bytes, uint64_t offset,
                  const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const size_t chunk = std::min<size_t>(bytes, size_t{1} << 30);
    ssize_t n = ::pwrite(fd, p, chunk, off_t(offset));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::FromErrno(errno, "write " + path + " at offset " + std::to_string(offset));
    }
    if (n == 0) {
      return Status::IoError("write " + path + " at offset " + std::to_string(offset) +
                             " wrote nothing; is the disk full?");
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status FsyncDirectoryOf(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open directory " + dir.string());
  Fd closer(fd);
  if (::fsync(fd) != 0 && errno != EINVAL) {  // some filesystems cannot fsync a directory
    return Status::FromErrno(errno, "fsync directory " + dir.string());
  }
  return Status::Ok();
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    const float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -magnitude : magnitude;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);  // inf or NaN (payload kept)
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float Bfloat16ToFloat(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

namespace {

// The file's layout for WriteSafetensors: the bytes before the data section, and the tensors'
// order and byte counts in the data section.
struct WriteLayout {
  std::string head;               // 8-byte length + padded JSON header
  std::vector<size_t> order;      // indices into `tensors`, by name
  std::vector<uint64_t> bytes_of;  // data bytes of tensors[i]
};

// The bytes before the data section: the 8-byte length and the JSON header, compact, with
// sorted keys, padded with spaces.
Result<std::string> EncodeHead(const json& header, const std::string& path) {
  std::string header_text;
  try {
    header_text = header.dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception& e) {
    return Status::InvalidArgument("export to " + path +
                                   ": a tensor name or metadata entry is not valid UTF-8 (" +
                                   e.what() + ")");
  }
  // Pad so that the data section starts 8-byte aligned, as the reference writer does.
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const uint64_t header_len = header_text.size();
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>(header_len >> (8 * i));
  head += header_text;
  return head;
}

Result<WriteLayout> LayOut(const std::vector<TensorView>& tensors,
                           const std::map<std::string, std::string>& metadata,
                           const std::string& path) {
  // Validate and lay out, in name order.
  WriteLayout out;
  std::vector<size_t>& order = out.order;
  order.resize(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });
  json header = json::object();
  std::vector<uint64_t>& bytes_of = out.bytes_of;
  bytes_of.resize(tensors.size());
  uint64_t data_bytes = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const TensorView& t = tensors[order[k]];
    const std::string where = "export to " + path + ": tensor '" + t.name + "'";
    if (t.name.empty()) return Status::InvalidArgument("export to " + path + ": empty tensor name");
    if (t.name == kMetadataKey) {
      return Status::InvalidArgument(where + ": the name is reserved for metadata");
    }
    if (k > 0 && tensors[order[k - 1]].name == t.name) {
      return Status::InvalidArgument(where + " appears twice; tensor names must be unique");
    }
    uint64_t numel = 1;
    for (int64_t d : t.shape) {
      if (d < 0) {
        return Status::InvalidArgument(where + ": negative dimension in shape " +
                                       HeaderShapeString(t.shape));
      }
      if (__builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel)) {
        return Status::InvalidArgument(where + ": shape " + HeaderShapeString(t.shape) +
                                       " overflows 64 bits");
      }
    }
    STRATA_CHECK(t.data != nullptr || numel == 0)
        << "tensor '" << t.name << "' with " << numel << " elements has no data";
    bytes_of[order[k]] = numel * sizeof(float);
    header[t.name] = {{"dtype", "F32"},
                      {"shape", t.shape},
                      {"data_offsets", {data_bytes, data_bytes + numel * sizeof(float)}}};
    data_bytes += numel * sizeof(float);
  }
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  STRATA_ASSIGN_OR_RETURN(out.head, EncodeHead(header, path));
  return out;
}

}  // namespace

Result<std::string> EncodeSafetensorsHeader(const std::vector<TensorView>& tensors,
                                            const std::map<std::string, std::string>& metadata,
                                            const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(WriteLayout layout, LayOut(tensors, metadata, path));
  return std::move(layout.head);
}

// The writer's state (safetensors.h): the temporary file, where each tensor goes, which are
// written.
struct SafetensorsWriter::State {
  std::string path, tmp;
  int fd = -1;
  bool committed = false;
  std::map<std::string, std::pair<uint64_t, uint64_t>> place;  // name -> (file offset, bytes)
  std::map<std::string, bool> written;
  // Not committed: the temporary file goes, `path` is left as it was.
  ~State() {
    if (fd >= 0) ::close(fd);
    if (!committed && !tmp.empty()) ::unlink(tmp.c_str());
  }
};

SafetensorsWriter::SafetensorsWriter(std::unique_ptr<State> state) : s_(std::move(state)) {}
SafetensorsWriter::SafetensorsWriter(SafetensorsWriter&&) noexcept = default;
SafetensorsWriter& SafetensorsWriter::operator=(SafetensorsWriter&&) noexcept = default;
SafetensorsWriter::~SafetensorsWriter() = default;

Result<SafetensorsWriter> SafetensorsWriter::Create(
    const std::string& path, const std::vector<TensorView>& tensors,
    const std::map<std::string, std::string>& metadata) {
  std::vector<TensorView> shapes = tensors;
  for (TensorView& t : shapes) t.data = reinterpret_cast<const float*>(&t);  // any non-null
  STRATA_ASSIGN_OR_RETURN(WriteLayout layout, LayOut(shapes, metadata, path));
  auto s = std::make_unique<State>();
  s->path = path;
  s->tmp = path + ".tmp." + std::to_string(::getpid());
  s->fd = ::open(s->tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (s->fd < 0) {
    const int err = errno;
    s->tmp.clear();  // nothing was created
    return Status::FromErrno(err, "create " + path + ".tmp (export to " + path + ")");
  }
  STRATA_RETURN_IF_ERROR(WriteAllAt(s->fd, layout.head.data(), layout.head.size(), 0, s->tmp));
  uint64_t offset = layout.head.size();
  for (size_t idx : layout.order) {
    s->place[tensors[idx].name] = {offset, layout.bytes_of[idx]};
    s->written[tensors[idx].name] = layout.bytes_of[idx] == 0;
    offset += layout.bytes_of[idx];
  }
  // The file's full size now: a disk without room fails here, before any tensor is made.
  if (offset > layout.head.size() && ::ftruncate(s->fd, off_t(offset)) != 0) {
    return Status::FromErrno(errno, "size " + s->tmp + " to " + std::to_string(offset) + " bytes");
  }
  return SafetensorsWriter(std::move(s));
}

Status SafetensorsWriter::write(const std::string& name, const float* data) {
  auto it = s_->place.find(name);
  STRATA_CHECK(it != s_->place.end()) << "tensor '" << name << "' is not in " << s_->path;
  STRATA_RETURN_IF_ERROR(
      WriteAllAt(s_->fd, data, size_t(it->second.second), it->second.first, s_->tmp));
  s_->written[name] = true;
  return Status::Ok();
}

Status SafetensorsWriter::commit() {
  for (const auto& [name, done] : s_->written) {
    STRATA_CHECK(done) << "tensor '" << name << "' of " << s_->path << " was never written";
  }
  if (::fsync(s_->fd) != 0) return Status::FromErrno(errno, "fsync " + s_->tmp);
  const int fd = std::exchange(s_->fd, -1);
  if (::close(fd) != 0) return Status::FromErrno(errno, "close " + s_->tmp);
  if (::rename(s_->tmp.c_str(), s_->path.c_str()) != 0) {
    return Status::FromErrno(errno, "rename " + s_->tmp + " to " + s_->path);
  }
  s_->committed = true;
  return FsyncDirectoryOf(s_->path);
}

Status WriteSafetensors(const std::string& path, const std::vector<TensorView>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  for (const TensorView& t : tensors) {
    uint64_t numel = 1;
    for (int64_t d : t.shape) numel *= uint64_t(std::max<int64_t>(d, 0));
    STRATA_CHECK(t.data != nullptr || numel == 0)
        << "tensor '" << t.name << "' with " << numel << " elements has no data";
  }
  STRATA_ASSIGN_OR_RETURN(SafetensorsWriter writer,
                          SafetensorsWriter::Create(path, tensors, metadata));
  for (const TensorView& t : tensors) STRATA_RETURN_IF_ERROR(writer.write(t.name, t.data));
  return writer.commit();
}

Result<SafetensorsFile> ParseSafetensors(std::string_view file, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const uint64_t header_len,
                          ParseSafetensorsHeaderLength(file.substr(0, 8), file.size(), path));
  const uint64_t data_start = 8 + header_len;
  STRATA_ASSIGN_OR_RETURN(
      SafetensorsHeader header,
      ParseSafetensorsHeader(file.substr(8, header_len), file.size() - data_start, path));
  SafetensorsFile out;
  out.metadata = std::move(header.metadata);
  for (Entry& e : header.entries) {
    SafetensorsTensor t;
    t.shape = std::move(e.shape);
    t.data.resize(e.numel);
    const char* src = file.data() + data_start + e.begin;
    if (e.dtype == "F32") {
      if (e.numel > 0) std::memcpy(t.data.data(), src, e.end - e.begin);
    } else {
      safetensors_internal::HalvesToFloats(src, e.numel, e.dtype == "BF16", t.data.data());
    }
    t.dtype = std::move(e.dtype);
    out.tensors.emplace(std::move(e.name), std::move(t));
  }
  return out;
}

}  // namespace strata
