// `strata bench pages` (in progress: returns NotSupported until implemented).
#include "tools/command.h"

namespace strata::tools {

void AddBenchPagesCommand(CLI::App& bench, CommandContext& ctx) {
  CLI::App* cmd = bench.add_subcommand("pages", "(not implemented yet)");
  cmd->callback([&ctx] { ctx.status = Status::NotSupported("strata bench pages is not implemented yet"); });
}

}  // namespace strata::tools
