// `strata train` (in progress).
#include "tools/command.h"

namespace strata::tools {

void AddTrainCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* cmd = app.add_subcommand("train", "Train a GPT (in progress)");
  cmd->callback([&ctx] { ctx.status = Status::NotSupported("strata train is not implemented yet"); });
}

}  // namespace strata::tools
