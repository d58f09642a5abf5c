// The ranges of TrainOptions' numeric fields, as one table: every number a user gives
// `strata train` is checked here, with the option named in the error (its mention, and an
// OptionFault: core/util/option.h; InvalidArgument, exit 2), before anything is read, planned or
// allocated. A whole-numbered option's fault (a count, a size) carries "got", "min" and "max",
// both ends allowed; a real-valued one's (--lr, --eps) names the option only, since a fault's
// numbers are integers.
//
// Some fields use a sentinel for "not given, take the default" (--seq 0, --min-lr < 0, the
// sizes 0). A sentinel is accepted only when the caller says the flag was not given: the CLI
// passes `given`, so `--seq 0` is an error naming --seq while a missing --seq takes the default.
// Code that builds TrainOptions itself (tests, benches) passes no `given`: sentinels are
// defaults there.
//
// Threads: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "core/util/option.h"
#include "core/util/status.h"
#include "scheduler/train_options.h"

namespace strata {

// The most tokens (--batch x --seq) one step may hold: with the shape limits of Note [Shape
// limits] (core/nn/shape_limits.h) every size computed for a step fits in 64 bits.
inline constexpr int64_t kMaxTokensPerStep = int64_t{1} << 22;

// Every numeric field within its range, and the relations between fields that a range cannot
// state (--min-lr <= --lr). `given(option)`: whether the user gave the option (nullptr: none
// was).
Status CheckOptionRanges(const TrainOptions& options,
                         const std::function<bool(Option option)>& given = nullptr);

// --batch x --seq within kMaxTokensPerStep, once `seq` is resolved (InvalidArgument).
Status CheckTokensPerStep(int batch, int seq);

}  // namespace strata
