#include "storage/slot_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/option.h"
#include "core/util/sizes.h"

namespace strata::storage {
namespace {

std::string FreeOrAsk() {
  return "free space, give " + Mention(Option::kNvmeDir) +
         " directories on other disks, or ask for less (" + Mention(Option::kNvmeMem) + ")";
}

std::string SlotsOf(uint64_t slots, uint64_t slot_bytes) {
  return std::to_string(slots) + " slots of " + FormatBytes(slot_bytes);
}

// fallocate's own failure. ENOSPC (the disk filled since it was checked, or the file's own
// metadata did not fit) gets the wording of the check, with the bytes free now.
Status FallocateFailed(int err, const std::string& dir, const std::string& what, uint64_t bytes,
                       const std::string& path) {
  if (err != ENOSPC) {
    return Status::FromErrno(err, "fallocate " + std::to_string(bytes) + " bytes for " + path);
  }
  Result<uint64_t> free_bytes = FreeBytes(dir);
  return NoSpaceError(dir, what, bytes, free_bytes.ok() ? *free_bytes : 0, FreeOrAsk(),
                      Option::kNvmeMem);
}

}  // namespace

std::string SlotFile::PathFor(const std::string& dir) {
  if (!dir.empty() && dir.back() == '/') return dir + kSlotFileName;
  return dir + "/" + kSlotFileName;
}

Result<std::unique_ptr<SlotFile>> SlotFile::Create(const SlotFileOptions& options) {
  const uint64_t bytes = BytesFor(options.slots, options.slot_bytes);
  STRATA_ASSIGN_OR_RETURN(uint64_t free_bytes, FreeBytes(options.dir));
  if (free_bytes < bytes) {
    return NoSpaceError(
        options.dir, "the store's slot file (" + SlotsOf(options.slots, options.slot_bytes) + ")",
        bytes, free_bytes, FreeOrAsk(), Option::kNvmeMem);
  }
  return OpenFile(options, /*create=*/true);
}

Result<std::unique_ptr<SlotFile>> SlotFile::Open(const SlotFileOptions& options) {
  return OpenFile(options, /*create=*/false);
}

Result<std::unique_ptr<SlotFile>> SlotFile::OpenFile(const SlotFileOptions& options, bool create) {
  STRATA_CHECK(options.slot_bytes > 0 && options.slot_bytes % 4096 == 0)
      << "slot size " << options.slot_bytes;
  std::unique_ptr<SlotFile> file(new SlotFile);
  file->dir_ = options.dir;
  file->path_ = create && options.pending ? PendingPathFor(options.dir) : PathFor(options.dir);
  file->slots_ = options.slots;
  file->slot_bytes_ = options.slot_bytes;
  file->faults_ = options.faults;
  const std::string& path = file->path_;
  const bool existed = PathExists(path);
  if (!create && !existed) {
    return AtFault(Option::kNvmeDir,
                   Status::NotFound("slot file " + path +
                                    " is missing; the store's catalog refers to it (was the "
                                    "directory wiped or is " +
                                    Mention(Option::kNvmeDir) + " pointing elsewhere?)"));
  }
  const int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  const bool refused = options.faults != nullptr && options.faults->direct_io_refused();
  int fd = refused ? -1 : ::open(path.c_str(), flags | O_DIRECT, 0644);
  int err = refused ? EINVAL : errno;
  if (fd < 0 && err == EINVAL) {
    if (create && !existed) ::unlink(path.c_str());
    if (options.direct_io == DirectIo::kRequire) {
      return AtFault(Option::kNvmeDir,
                     Status::NotSupported(Mention(Option::kNvmeDir) + " " + options.dir +
                                          ": the filesystem refuses O_DIRECT; put the store on a "
                                          "filesystem that supports direct I/O (ext4, xfs)"));
    }
    file->direct_io_ = false;
    fd = ::open(path.c_str(), flags, 0644);
    err = errno;
  }
  if (fd < 0) return Status::FromErrno(err, "open " + path);
  file->fd_.reset(fd);

  STRATA_RETURN_IF_ERROR(create ? file->allocate_whole(existed) : file->check_length());
  return file;
}

Status SlotFile::allocate_whole(bool existed) {
  const uint64_t bytes = BytesFor(slots_, slot_bytes_);
  const int r = faults_ != nullptr && faults_->fallocate_refused()
                    ? ENOSPC
                    : ::posix_fallocate(fd_.get(), 0, static_cast<off_t>(bytes));
  if (r != 0) {
    if (!existed) ::unlink(path_.c_str());
    return FallocateFailed(r, dir_, "the store's slot file (" + SlotsOf(slots_, slot_bytes_) + ")",
                           bytes, path_);
  }
  if (::fsync(fd_.get()) != 0) {
    int e = errno;
    if (!existed) ::unlink(path_.c_str());
    return Status::FromErrno(e, "fsync " + path_);
  }
  return Status::Ok();
}

Status SlotFile::check_length() const {
  const uint64_t bytes = BytesFor(slots_, slot_bytes_);
  struct stat st;
  if (::fstat(fd_.get(), &st) != 0) return Status::FromErrno(errno, "stat " + path_);
  if (static_cast<uint64_t>(st.st_size) < bytes) {
    return Status::Corruption("slot file " + path_ + " is " + std::to_string(st.st_size) +
                              " bytes but the catalog expects " + std::to_string(bytes) +
                              "; it was truncated outside Strata");
  }
  return Status::Ok();
}

Status SlotFile::publish() {
  const std::string final_path = PathFor(dir_);
  if (path_ == final_path) return Status::Ok();
  STRATA_RETURN_IF_ERROR(RenameDurably(path_, final_path));
  path_ = final_path;
  return Status::Ok();
}

Status SlotFile::extend(uint64_t slots) {
  if (slots <= slots_) return Status::Ok();
  const uint64_t bytes = BytesFor(slots, slot_bytes_);
  const int r = faults_ != nullptr && faults_->fallocate_refused()
                    ? ENOSPC
                    : ::posix_fallocate(fd_.get(), 0, static_cast<off_t>(bytes));
  if (r != 0) {
    return FallocateFailed(r, dir_,
                           "growing the store's slot file to " + SlotsOf(slots, slot_bytes_),
                           bytes - BytesFor(slots_, slot_bytes_), path_);
  }
  if (::fsync(fd_.get()) != 0) return Status::FromErrno(errno, "fsync " + path_);
  slots_ = slots;
  return Status::Ok();
}

Status SlotFile::sync() const {
  while (::fdatasync(fd_.get()) != 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "fdatasync " + path_);
  }
  return Status::Ok();
}

}  // namespace strata::storage
