// `strata stress`: the soak, a room of its own.
//
// stress/ is the harness that soaks the offload paths: code we ship to ourselves, kept out of the
// product's rooms. It builds into the static library strata_stress, which the `strata` binary
// links (tools/main.cc registers the command). What is here:
//   stress_command.cc     the `strata stress` subcommand: its flags, the soak loop, the summary
//                         table and the --json object (both are contracts: tests/tools/
//                         stress_test.cc and docs/reliability.md read them)
//   stress_config.h       a drawn configuration and the `strata train` flags it becomes
//   stress_scenario.h     one configuration: the in-memory reference, then disturbed paged
//                         attempts in one scratch directory
//   stress_disturbance.h  what goes wrong in one attempt
//   stress_child.h        a child `strata` process: spawned, watched, signalled, killed on a hang
//   stress_judge.h        Note [Stress outcomes]: what every attempt and the whole run must show
//   stress_pages.h        a byte of a checkpoint page flipped; every page read back, verified
//   stress_disk.h         a loop-mounted ext4 that fills up mid-run (needs root)
//   stress_rank_change.h  a resume as another number of ranks, which must be refused
//   fault_spec.h          the SPEC language of disk faults, armed in a child `strata train`
//
// The soak disturbs a child `strata train` (this very binary) from outside: signals, a filled
// disk, flipped bytes, and disk faults that the child's NVMe tier injects into its own I/O.
// Those faults reach the child through its environment, not a flag: STRATA_INJECT_FAULTS=SPEC
// (the SPEC language is in stress/fault_spec.h, e.g. `eio-after=40,latency-us=200`), read once by
// `strata train`'s setup (tools/cmd_train.cc) and armed on the storage layer's FaultInjector. The
// soak sets it only for the attempts that draw a disk fault and removes it from every other child's
// environment (stress/stress_child.h); a failure report shows it in front of the command line.
// To replay one by hand: `STRATA_INJECT_FAULTS=enospc-after=64K strata train ... --nvme-dir D`;
// the child prints `strata: inject-faults: N requests failed` at exit.
//
// Threads: the command runs on the calling thread; children are processes.
#pragma once

#include <CLI/CLI.hpp>

#include "core/util/status.h"

namespace strata::stress {

// Adds `strata stress` to `app`. The callback it sets runs the soak and stores the outcome in
// `status`, which must outlive the parse: Aborted when any configuration lost data, mismatched or
// failed (main() exits 1), InvalidArgument for bad flags (exit 2).
void AddStressCommand(CLI::App& app, Status& status);

}  // namespace strata::stress
