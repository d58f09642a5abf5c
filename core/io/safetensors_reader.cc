#include "core/io/safetensors_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "core/io/safetensors_format.h"
#include "core/util/check.h"

namespace strata {
namespace {

// Reads exactly `bytes` at `offset`; a file that ends early is Corruption (it was validated
// against its size, so it shrank underneath us).
Status PreadAll(int fd, void* data, size_t bytes, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const size_t chunk = std::min<size_t>(bytes, size_t{1} << 30);
    ssize_t n = ::pread(fd, p, chunk, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Status::FromErrno(errno, "read " + path + " at offset " + std::to_string(offset));
    }
    if (n == 0) {
      return Status::Corruption("safetensors file " + path + " ended at offset " +
                                std::to_string(offset) + " while " + std::to_string(bytes) +
                                " more bytes were expected; was it modified while being read?");
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

// Closes the descriptor on the error paths of Open.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

// Bytes per element of a dtype the header parser accepted.
uint64_t ElementBytes(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

}  // namespace

SafetensorsReader::SafetensorsReader(int fd, std::string path, SafetensorsHeader header,
                                     uint64_t data_start)
    : fd_(fd), path_(std::move(path)), header_(std::move(header)), data_start_(data_start) {}

SafetensorsReader::SafetensorsReader(SafetensorsReader&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      path_(std::move(o.path_)),
      header_(std::move(o.header_)),
      data_start_(o.data_start_) {}

SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::move(o.path_);
    header_ = std::move(o.header_);
    data_start_ = o.data_start_;
  }
  return *this;
}

SafetensorsReader::~SafetensorsReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<SafetensorsReader> SafetensorsReader::Open(const std::string& path) {
  FdGuard fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) {
    if (errno == ENOENT) {
      return Status::NotFound("safetensors file " + path + " does not exist; check the path");
    }
    return Status::FromErrno(errno, "open safetensors file " + path);
  }
  struct stat st;
  if (::fstat(fd.fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(path + " is a directory, not a safetensors file");
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  char len_le[8];
  const size_t len_bytes = std::min<uint64_t>(file_bytes, sizeof len_le);
  STRATA_RETURN_IF_ERROR(PreadAll(fd.fd, len_le, len_bytes, 0, path));
  STRATA_ASSIGN_OR_RETURN(
      const uint64_t header_len,
      ParseSafetensorsHeaderLength(std::string_view(len_le, len_bytes), file_bytes, path));
  std::string header_text(header_len, '\0');
  STRATA_RETURN_IF_ERROR(PreadAll(fd.fd, header_text.data(), header_len, 8, path));
  const uint64_t data_start = 8 + header_len;
  STRATA_ASSIGN_OR_RETURN(SafetensorsHeader header,
                          ParseSafetensorsHeader(header_text, file_bytes - data_start, path));
  return SafetensorsReader(std::exchange(fd.fd, -1), path, std::move(header), data_start);
}

const SafetensorsEntry* SafetensorsReader::find(const std::string& name) const {
  for (const SafetensorsEntry& e : header_.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Status SafetensorsReader::read(const SafetensorsEntry& e, uint64_t first, uint64_t count,
                               float* out) const {
  STRATA_CHECK(first <= e.numel && count <= e.numel - first)
      << "elements [" << first << ", " << first + count << ") of " << e.name << " ("
      << e.numel << ")";
  const uint64_t size = ElementBytes(e.dtype);
  const uint64_t offset = data_start_ + e.begin + first * size;
  if (e.dtype == "F32") return PreadAll(fd_, out, count * size, offset, path_);
  // Widen in chunks: a bf16 tensor of a 7B model is never held twice.
  constexpr uint64_t kChunk = uint64_t{1} << 20;
  std::vector<char> halves(std::min(count, kChunk) * 2);
  for (uint64_t done = 0; done < count;) {
    const uint64_t n = std::min(count - done, kChunk);
    STRATA_RETURN_IF_ERROR(PreadAll(fd_, halves.data(), n * 2, offset + done * 2, path_));
    safetensors_internal::HalvesToFloats(halves.data(), n, e.dtype == "BF16", out + done);
    done += n;
  }
  return Status::Ok();
}

Result<SafetensorsFile> ReadSafetensors(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(const SafetensorsReader reader, SafetensorsReader::Open(path));
  SafetensorsFile out;
  out.metadata = reader.header().metadata;
  for (const SafetensorsEntry& e : reader.header().entries) {
    SafetensorsTensor t;
    t.shape = e.shape;
    t.data.resize(e.numel);
    STRATA_RETURN_IF_ERROR(reader.read(e, 0, e.numel, t.data.data()));
    t.dtype = e.dtype;
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace strata
