// Opening a PageStore: validating the options, creating a new store crash-safely or checking an
// existing one against them (recovering the free slots from the catalog: page_store_recover.cc).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>

#include "core/util/log.h"
#include "core/util/option.h"
#include "storage/page_store.h"
#include "storage/posix_file.h"
#include "storage/store_dirs.h"

namespace strata::storage {
namespace {

std::string JoinDirs(const std::vector<std::string>& dirs) {
  std::string out;
  for (const std::string& d : dirs) out += (out.empty() ? "" : ", ") + d;
  return "[" + out + "]";
}

// Note [Disk space]
// What a store needs on disk is reserved or checked before anything is written:
// - the slot files are fallocated whole at creation, so a page write never meets a full disk;
// - the catalog (RocksDB) grows with its write-ahead log, its tables and the manifests of the
//   checkpoints. It preallocates nothing (allow_fallocate off in catalog.cc: RocksDB's default
//   preallocation of its log took whatever space was left, so a --ckpt-dir on the same
//   filesystem then failed with ENOSPC while df still showed free space), and the first
//   directory must keep CatalogHeadroomBytes free, checked at creation (on top of the slot
//   files) and at every reopen, before RocksDB opens: on a full disk RocksDB's recovery can
//   fail halfway and abort. Checkpoint records (--ckpt-dir) are a few KiB; the headroom covers
//   them when they share the filesystem;
// - the headroom is checked, not reserved: another program can still fill the disk mid-run.
//   The catalog write that meets it fails, the catalog is poisoned (Note [Poisoned catalog] in
//   catalog.cc) and the run stops with ENOSPC's message, its last commit and checkpoints intact;
// - every refusal or failure for lack of space, checked ahead (a new store, several --nvme-dir
//   on one filesystem, the headroom, a growth) or met by fallocate itself, is worded by
//   NoSpaceError (posix_file.h): "No space left on device (ENOSPC)", the bytes needed and free.
// `also_needed` bytes of slot files go to the same filesystem (`also_what` names them).
Status CheckCatalogHeadroom(const std::string& dir, uint64_t slots, uint64_t also_needed,
                            const std::string& also_what = "its slot files") {
  const uint64_t need = CatalogHeadroomBytes(slots) + also_needed;
  STRATA_ASSIGN_OR_RETURN(uint64_t free_bytes, FreeBytes(dir));
  if (free_bytes >= need) return Status::Ok();
  return NoSpaceError(
      dir,
      "the store (" +
          (also_needed > 0 ? also_what + " " + FormatBytes(also_needed) + " and " : std::string()) +
          FormatBytes(CatalogHeadroomBytes(slots)) +
          " of headroom for its catalog's log, tables and checkpoint manifests)",
      need, free_bytes,
      "free space on that filesystem (nothing was written: the store and its "
      "checkpoints are as they were)",
      Option::kNvmeDir);
}

// Checks that every filesystem under `dirs` has room for `bytes_per_dir` of slots per directory
// it holds (several --nvme-dir on one disk need the sum); returns the bytes the first
// directory's filesystem takes. `what(n)` names what needs the room when n directories share
// the filesystem, for NoSpaceError; `advice` says to ask for less, so {nvme_mem} is at fault.
Result<uint64_t> CheckRoomForSlots(const std::vector<std::string>& dirs, uint64_t bytes_per_dir,
                                   const std::function<std::string(size_t)>& what,
                                   const std::string& advice) {
  struct Fs {
    dev_t dev;
    uint64_t bytes;
    size_t dirs;
  };
  std::vector<Fs> by_fs;
  for (const std::string& d : dirs) {
    struct stat st;
    if (::stat(d.c_str(), &st) != 0) {
      return AtFault(Option::kNvmeDir,
                     Status::FromErrno(errno, Mention(Option::kNvmeDir) + " " + d));
    }
    auto it =
        std::find_if(by_fs.begin(), by_fs.end(), [&](const Fs& fs) { return fs.dev == st.st_dev; });
    if (it == by_fs.end()) it = by_fs.insert(by_fs.end(), Fs{st.st_dev, 0, 0});
    it->bytes += bytes_per_dir;
    ++it->dirs;
    STRATA_ASSIGN_OR_RETURN(uint64_t free_bytes, FreeBytes(d));
    if (free_bytes < it->bytes) {
      return NoSpaceError(d, what(it->dirs), it->bytes, free_bytes, advice, Option::kNvmeMem);
    }
  }
  return by_fs.front().bytes;
}

// "N slots of P" and, when several directories share the filesystem, "in each of the n".
std::string SlotsPerDir(uint64_t slots, uint64_t page_bytes, size_t dirs_on_fs) {
  std::string text = std::to_string(slots) + " slots of " + FormatBytes(page_bytes);
  if (dirs_on_fs > 1) {
    text += " in each of the " + std::to_string(dirs_on_fs) + " " + Mention(Option::kNvmeDir) +
            " on this filesystem";
  }
  return text;
}

}  // namespace

uint64_t CatalogHeadroomBytes(uint64_t slots) { return 16 * kMiB + 256 * slots; }

Result<std::unique_ptr<PageStore>> PageStore::Open(const PageStoreOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> dirs, CheckedDirs(options));
  std::unique_ptr<PageStore> store(new PageStore);
  // The lock first: a process that does not own the store touches nothing of it.
  STRATA_ASSIGN_OR_RETURN(store->lock_, StoreLock::Acquire(dirs));
  SlotFileOptions slot_options;
  slot_options.slot_bytes = options.page_bytes;
  slot_options.direct_io = options.direct_io;
  slot_options.faults = options.faults;
  if (Catalog::Exists(Catalog::PathFor(dirs[0]))) {
    STRATA_RETURN_IF_ERROR(store->open_existing(dirs, options.capacity_bytes, slot_options));
  } else {
    STRATA_RETURN_IF_ERROR(store->create_new(dirs, options.capacity_bytes, slot_options));
  }
  STRATA_RETURN_IF_ERROR(store->start_engine(options.io, options.faults));
  STRATA_RETURN_IF_ERROR(store->recover());
  return store;
}

Status PageStore::open_existing(const std::vector<std::string>& dirs, uint64_t capacity_bytes,
                                SlotFileOptions slot_options) {
  const std::string catalog_path = Catalog::PathFor(dirs[0]);
  STRATA_ASSIGN_OR_RETURN(StoreLayout layout, Catalog::ReadLayout(catalog_path));
  if (layout.format_version != kCatalogFormatVersion) {
    return AtFault(Option::kNvmeDir,
                   Status::NotSupported(
                       "store at " + catalog_path + " has format version " +
                       std::to_string(layout.format_version) + "; this Strata reads " +
                       std::to_string(kCatalogFormatVersion) +
                       "; use the Strata that wrote it or another " + Mention(Option::kNvmeDir)),
                   {{"format", layout.format_version}, {"reads_format", kCatalogFormatVersion}});
  }
  if (layout.page_bytes != slot_options.slot_bytes) {
    return AtFault(Option::kPageSize,
                   Status::InvalidArgument(
                       "store at " + catalog_path + " was made with page size " +
                       FormatBytes(layout.page_bytes) + " but this run asks for " +
                       FormatBytes(slot_options.slot_bytes) +
                       "; pass the store's page size or use another " + Mention(Option::kNvmeDir)),
                   {{"got", FaultNumber(slot_options.slot_bytes)},
                    {"store_page_bytes", FaultNumber(layout.page_bytes)}});
  }
  if (layout.dirs != dirs) {
    return AtFault(
        Option::kNvmeDir,
        Status::InvalidArgument("store at " + catalog_path + " spans " + Mention(Option::kNvmeDir) +
                                " " + JoinDirs(layout.dirs) + " but this run passes " +
                                JoinDirs(dirs) + "; pass the same directories in order"),
        {{"dirs", int64_t(dirs.size())}, {"store_dirs", int64_t(layout.dirs.size())}});
  }
  STRATA_RETURN_IF_ERROR(
      CheckCatalogHeadroom(dirs[0], layout.slots_per_file * dirs.size(), /*also_needed=*/0));
  layout_ = layout;
  for (const std::string& d : dirs) {
    slot_options.dir = d;
    slot_options.slots = layout.slots_per_file;
    if (!PathExists(SlotFile::PathFor(d)) && PathExists(SlotFile::PendingPathFor(d))) {
      // The creation committed (the catalog exists) but was cut before this rename.
      STRATA_RETURN_IF_ERROR(RenameDurably(SlotFile::PendingPathFor(d), SlotFile::PathFor(d)));
    }
    STRATA_ASSIGN_OR_RETURN(auto file, SlotFile::Open(slot_options));
    files_.push_back(std::move(file));
  }
  STRATA_ASSIGN_OR_RETURN(catalog_, Catalog::Open(catalog_path, /*create=*/false));
  return grow_to(capacity_bytes);
}

// Note [Growing a store]
// A reopen with a larger capacity extends every slot file (fallocate, fsync) and then rewrites
// the layout in the catalog, the commit point. A crash in between leaves files longer than the
// layout says, which Open accepts (only a shorter file is Corruption), and the next reopen
// grows again. A store never shrinks: its slots may hold checkpointed versions.
Status PageStore::grow_to(uint64_t capacity_bytes) {
  const uint64_t page_bytes = layout_.page_bytes, dirs = files_.size();
  const uint64_t pages = (capacity_bytes + page_bytes - 1) / page_bytes;
  const uint64_t slots_per_file = (pages + dirs - 1) / dirs;
  if (slots_per_file <= layout_.slots_per_file) {
    if (slots_per_file < layout_.slots_per_file && capacity_bytes > 0) {
      Logger("storage")->info("NVMe store {} keeps its {} of slots (a store never shrinks)",
                              catalog_->path(),
                              FormatBytes(layout_.slots_per_file * dirs * page_bytes));
    }
    return Status::Ok();
  }
  const uint64_t more = slots_per_file - layout_.slots_per_file;
  std::vector<std::string> dir_list;
  for (const auto& file : files_) dir_list.push_back(file->dir());
  STRATA_ASSIGN_OR_RETURN(const uint64_t first_fs_bytes,
                          CheckRoomForSlots(
                              dir_list, SlotFile::BytesFor(more, page_bytes),
                              [&](size_t n) {
                                return "growing the store to " + FormatBytes(capacity_bytes) +
                                       " (" + SlotsPerDir(more, page_bytes, n) + " more)";
                              },
                              "free space or ask for less (" + Mention(Option::kNvmeMem) + ")"));
  // The catalog keeps its headroom after the growth too.
  STRATA_RETURN_IF_ERROR(CheckCatalogHeadroom(dir_list[0], slots_per_file * dirs, first_fs_bytes,
                                              "growing its slot files by"));
  for (const auto& file : files_) STRATA_RETURN_IF_ERROR(file->extend(slots_per_file));
  StoreLayout grown = layout_;
  grown.slots_per_file = slots_per_file;
  STRATA_RETURN_IF_ERROR(catalog_->write_layout(grown));
  Logger("storage")->info("grew NVMe store {} to {} slots of {}", catalog_->path(),
                          slots_per_file * dirs, FormatBytes(page_bytes));
  layout_ = grown;
  return Status::Ok();
}

Status PageStore::create_new(const std::vector<std::string>& dirs, uint64_t capacity_bytes,
                             SlotFileOptions slot_options) {
  const uint64_t page_bytes = slot_options.slot_bytes;
  if (capacity_bytes == 0) {
    return AtFault(Option::kNvmeMem,
                   Status::InvalidArgument("a new NVMe store in " + dirs[0] +
                                           " needs a capacity (bytes of slots across all " +
                                           Mention(Option::kNvmeDir) + ")"),
                   {{"got", 0}});
  }
  const uint64_t pages = (capacity_bytes + page_bytes - 1) / page_bytes;
  const uint64_t slots_per_file = std::max<uint64_t>(1, (pages + dirs.size() - 1) / dirs.size());
  const uint64_t bytes_per_file = SlotFile::BytesFor(slots_per_file, page_bytes);
  for (const std::string& d : dirs) {
    // Never create over another store's files: its pages would be overwritten.
    if (Catalog::Exists(Catalog::PathFor(d)) || PathExists(SlotFile::PathFor(d))) {
      return AtFault(
          Option::kNvmeDir,
          Status::AlreadyExists(
              Mention(Option::kNvmeDir) + " " + d + " already holds a Strata store (" +
              (Catalog::Exists(Catalog::PathFor(d)) ? Catalog::PathFor(d) : SlotFile::PathFor(d)) +
              ") that " + dirs[0] +
              " does not describe; pass that store's directories in their "
              "original order (the first holds strata.catalog), or delete its files to start "
              "over"));
    }
    STRATA_RETURN_IF_ERROR(CheckEmptyForNewStore(d));
  }
  // Check every disk before touching any: dirs sharing a filesystem need the sum.
  STRATA_ASSIGN_OR_RETURN(
      const uint64_t first_fs_bytes,
      CheckRoomForSlots(
          dirs, bytes_per_file,
          [&](size_t n) {
            return std::string(n > 1 ? "the store's slot files (" : "the store's slot file (") +
                   SlotsPerDir(slots_per_file, page_bytes, n) + ")";
          },
          "free space, give " + Mention(Option::kNvmeDir) +
              " directories on other disks, or ask for less "
              "(" +
              Mention(Option::kNvmeMem) + ")"));
  // The first directory also keeps the catalog's headroom beside its slot files.
  STRATA_RETURN_IF_ERROR(
      CheckCatalogHeadroom(dirs[0], slots_per_file * dirs.size(), first_fs_bytes));
  layout_ = StoreLayout{kCatalogFormatVersion, page_bytes, slots_per_file, dirs};
  STRATA_RETURN_IF_ERROR(create_files(slot_options));
  Logger("storage")->info("created NVMe store: {} slots of {} in {}",
                          slots_per_file * dirs.size(), FormatBytes(page_bytes), JoinDirs(dirs));
  return Status::Ok();
}

Status PageStore::start_engine(IoEngineOptions io, FaultInjector* faults) {
  io.faults = faults;
  for (const auto& f : files_) {
    if (!f->direct_io() && io.backend != IoBackend::kSync) {
      static std::atomic<bool> logged{false};
      if (!logged.exchange(true)) {
        Logger("storage")->info(
            "{} {} refuses O_DIRECT; using buffered pread/pwrite with fdatasync",
            Mention(Option::kNvmeDir), f->dir());
      }
      io.backend = IoBackend::kSync;
    }
  }
  STRATA_ASSIGN_OR_RETURN(engine_, IoEngine::Create(io));
  for (const auto& f : files_) {
    STRATA_ASSIGN_OR_RETURN(int index, engine_->register_file(f->fd(), f->path()));
    engine_files_.push_back(index);
  }
  return Status::Ok();
}

// Note [Creating a store]
// A crash while a store is being created must leave nothing that later looks like a store
// (Open refuses to create over one), and must not leave a store without its files:
//   1. each directory gets strata.slots.new (fallocated, fsynced);
//   2. the catalog is built as strata.catalog.new with its layout (sync);
//   3. renaming it to strata.catalog (and fsyncing the directory) is the commit point;
//   4. the slot files are renamed to strata.slots; Open completes this step if it was cut.
// Leftover *.new files without a committed catalog are an interrupted creation and are
// replaced by the next creation.
Status PageStore::create_files(SlotFileOptions slot_options) {
  const std::string catalog_path = Catalog::PathFor(layout_.dirs[0]);
  const std::string pending_catalog = catalog_path + ".new";
  std::vector<std::string> created;
  auto fail = [&](const Status& s) {
    files_.clear();
    for (const std::string& path : created) {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
    return s;
  };
  {
    std::error_code ec;
    std::filesystem::remove_all(pending_catalog, ec);
  }
  for (const std::string& d : layout_.dirs) {
    ::unlink(SlotFile::PendingPathFor(d).c_str());
    slot_options.dir = d;
    slot_options.slots = layout_.slots_per_file;
    slot_options.pending = true;
    Result<std::unique_ptr<SlotFile>> file = SlotFile::Create(slot_options);
    if (!file.ok()) return fail(file.status());
    created.push_back(SlotFile::PendingPathFor(d));
    files_.push_back(std::move(file).value());
  }
  created.push_back(pending_catalog);
  {
    Result<std::unique_ptr<Catalog>> catalog = Catalog::Open(pending_catalog, /*create=*/true);
    if (!catalog.ok()) return fail(catalog.status());
    Status s = (*catalog)->write_layout(layout_);
    if (!s.ok()) return fail(s);
  }  // closed before the rename: RocksDB keeps using the path it was opened with
  if (Status s = RenameDurably(pending_catalog, catalog_path); !s.ok()) return fail(s);
  for (auto& file : files_) STRATA_RETURN_IF_ERROR(file->publish());
  STRATA_ASSIGN_OR_RETURN(catalog_, Catalog::Open(catalog_path, /*create=*/false));
  return Status::Ok();
}

}  // namespace strata::storage
