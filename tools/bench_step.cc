// `strata bench step` (in progress: returns NotSupported until implemented).
#include "tools/command.h"

namespace strata::tools {

void AddBenchStepCommand(CLI::App& bench, CommandContext& ctx) {
  CLI::App* cmd = bench.add_subcommand("step", "(not implemented yet)");
  cmd->callback([&ctx] { ctx.status = Status::NotSupported("strata bench step is not implemented yet"); });
}

}  // namespace strata::tools
