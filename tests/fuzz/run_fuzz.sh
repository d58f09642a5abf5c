#!/usr/bin/env bash
# One `fuzz` ctest entry: fuzzes BINARY (target NAME) for SECONDS.
# Usage: run_fuzz.sh BINARY NAME FUZZ_DIR WORK_DIR SECONDS
#   FUZZ_DIR/corpus/NAME and FUZZ_DIR/regressions/NAME are read, never written: libFuzzer writes
#   new inputs only into its first corpus directory, a fresh WORK_DIR/corpus. A crash leaves its
#   input in WORK_DIR/crash-* (add it to FUZZ_DIR/regressions/NAME with the fix); FUZZ_DIR/NAME.dict
#   is used when present. Ends with libFuzzer's stats (stat::number_of_executed_units).
set -euo pipefail
binary=$1 name=$2 fuzz_dir=$3 work=$4 seconds=$5
rm -rf "$work"
mkdir -p "$work/corpus"
# -max_len: inputs up to 16 KiB (a token file's header is 1 KiB); longer files in the corpus,
# e.g. the 400 KB regression input, are cut to it (the default suite runs them whole).
args=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
      -max_len=16384 -artifact_prefix="$work/")
[[ -f $fuzz_dir/$name.dict ]] && args+=(-dict="$fuzz_dir/$name.dict")
dirs=("$work/corpus" "$fuzz_dir/corpus/$name")
[[ -d $fuzz_dir/regressions/$name ]] && dirs+=("$fuzz_dir/regressions/$name")
exec "$binary" "${args[@]}" "${dirs[@]}"
