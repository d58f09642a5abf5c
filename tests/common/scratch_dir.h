// ScratchDir: a fresh directory on a real disk for one test, removed with everything in it when
// the object goes away. Shared by every test folder.
//
// It lives under $STRATA_TEST_TMPDIR when set, else /var/tmp — never /tmp, which may be tmpfs,
// where O_DIRECT alignment is not enforced and the NVMe tier's checks would prove nothing.
#pragma once

#include <gtest/gtest.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

namespace strata::test_support {

// Where every test's scratch directories live: $STRATA_TEST_TMPDIR when set, else /var/tmp.
inline std::string ScratchRoot() {
  const char* base = std::getenv("STRATA_TEST_TMPDIR");
  return base != nullptr ? base : "/var/tmp";
}

class ScratchDir {
 public:
  // `tag` shows in the directory's name, to tell leftovers apart: /var/tmp/strata-<tag>-XXXXXX.
  explicit ScratchDir(std::string_view tag = "test") {
    std::string tmpl = ScratchRoot();
    tmpl.append("/strata-").append(tag).append("-XXXXXX");
    const char* p = ::mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr) << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name, created if missing.
  std::string sub(const std::string& name) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(p);
    return p;
  }
  // True when the directory is on tmpfs, where O_DIRECT alignment is not enforced.
  bool on_tmpfs() const {
    struct statfs fs;
    return ::statfs(path_.c_str(), &fs) == 0 && fs.f_type == 0x01021994;  // TMPFS_MAGIC
  }

 private:
  std::string path_;
};

}  // namespace strata::test_support
