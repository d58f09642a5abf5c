#include "scheduler/export_dir.h"

#include <filesystem>
#include <system_error>

#include "core/util/durable_file.h"
#include "core/util/option.h"

namespace strata::scheduler {

Status PrepareExportDir(const OutputOptions& outputs) {
  if (outputs.export_dir.empty()) return Status::Ok();
  std::error_code ec;
  std::filesystem::create_directory(outputs.export_dir, ec);
  if (ec) {
    return AtFault(Option::kExportDir,
                   Status::FromErrno(ec.value(), Mention(Option::kExportDir) + " " +
                                                     outputs.export_dir + ": cannot create it"));
  }
  return Status::Ok();
}

Status WriteExportConfig(const OutputOptions& outputs) {
  if (outputs.export_dir.empty()) return Status::Ok();
  return AtFault(Option::kExportDir,
                 WriteFileDurably(outputs.export_dir, "config.json", outputs.export_config + "\n",
                                  Mention(Option::kExportDir)));
}

}  // namespace strata::scheduler
