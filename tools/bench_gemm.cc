// `strata bench gemm` (in progress: returns NotSupported until implemented).
#include "tools/command.h"

namespace strata::tools {

void AddBenchGemmCommand(CLI::App& bench, CommandContext& ctx) {
  CLI::App* cmd = bench.add_subcommand("gemm", "(not implemented yet)");
  cmd->callback([&ctx] { ctx.status = Status::NotSupported("strata bench gemm is not implemented yet"); });
}

}  // namespace strata::tools
