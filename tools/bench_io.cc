// `strata bench io` (in progress: returns NotSupported until implemented).
#include "tools/command.h"

namespace strata::tools {

void AddBenchIoCommand(CLI::App& bench, CommandContext& ctx) {
  CLI::App* cmd = bench.add_subcommand("io", "(not implemented yet)");
  cmd->callback([&ctx] { ctx.status = Status::NotSupported("strata bench io is not implemented yet"); });
}

}  // namespace strata::tools
