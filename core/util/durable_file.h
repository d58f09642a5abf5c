// Writing a small file so that a kill at any instant leaves either the old or the new contents:
// a temporary file, fsync, rename over the old one, fsync of the directory.
#pragma once
#include <string>
#include "core/util/status.h"

namespace strata {

// Writes `text` to `dir`/`name` durably and atomically, creating `dir` when missing. IoError
// naming `what` (e.g. "--ckpt-dir") and the path on failure.
[[nodiscard]] Status WriteFileDurably(const std::string& dir, const std::string& name,
                                      const std::string& text, const std::string& what);

// fsync of a file or a directory.
[[nodiscard]] Status FsyncPath(const std::string& path, bool directory);

}  // namespace strata
