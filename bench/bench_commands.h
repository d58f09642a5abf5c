// The kinds of `strata bench`, each a measurement that prints JSON on stdout (logs go to stderr).
//
// bench/ is the harness that measures this machine and Strata against it: code we ship to
// ourselves, kept out of the product's rooms. It builds into the static library strata_bench,
// which the `strata` binary links; tools/cmd_bench.cc makes the `bench` subcommand and calls
// these to add its kinds. Beside the code sit the scripts that run it and turn its JSON into
// BENCHMARKS.md (bench/update_benchmarks.py, bench/results/): every subcommand, flag and JSON
// field here is a contract they rely on.
//
// Each function adds one kind to `bench` (the CLI11 app of `strata bench`). The callback it sets
// runs the measurement and stores the outcome in `status`, which must outlive the parse;
// main() turns it into one line on stderr and the exit code (2 for InvalidArgument: bad flags,
// 1 for everything else).
#pragma once

#include <CLI/CLI.hpp>

#include "core/util/status.h"

namespace strata::bench {

// Each in bench/bench_<kind>.cc.
void AddBenchGemmCommand(CLI::App& bench, Status& status);
void AddBenchStepCommand(CLI::App& bench, Status& status);
void AddBenchIoCommand(CLI::App& bench, Status& status);
void AddBenchPagesCommand(CLI::App& bench, Status& status);
void AddBenchOffloadCommand(CLI::App& bench, Status& status);
void AddBenchParallelCommand(CLI::App& bench, Status& status);
// The ranks `strata bench parallel` launches under mpirun (hidden from --help).
void AddBenchParallelWorkerCommand(CLI::App& bench, Status& status);

}  // namespace strata::bench
