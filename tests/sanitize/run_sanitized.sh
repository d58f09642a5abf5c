#!/usr/bin/env bash
# Builds Strata with sanitizers in a separate tree and runs the module test binaries there.
#
#   run_sanitized.sh <address,undefined|thread> <source-dir> <build-dir>
#
# - address,undefined: ASan + UBSan over every test of each module binary except `*Stress*`.
# - thread: TSan over the concurrent tests only, chosen by tests/sanitize/tsan_filter.txt, with
#   TBB and OpenBLAS single-threaded (tsan_tbb_serial.cc explains why).
# The build is RelWithDebInfo at -O0 (reports are as precise; the stage is nearly all build
# time) with CUDA off (sanitizers do not see into device code) and without the benchmark harness
# (STRATA_BENCH=OFF: no test here runs `strata bench`, and its 24 files were 682 of the 3485
# compile seconds of the ASan tree on 2026-11-28). It builds only the module test binaries that
# have tests to run, and the TSan tree only the test sources that define them. Any sanitizer
# report stops the binary with a non-zero exit (halt_on_error), and any failing binary fails
# this script.
# Environment: STRATA_SANITIZE_JOBS (build parallelism, default nproc), CMAKE_GENERATOR,
# CC/CXX (passed by the ctest entry: the outer tree's toolchain, used when clang-16 is absent),
# STRATA_SANITIZE_CC/CXX (a toolchain for the sanitized trees only).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 <address,undefined|thread> <source-dir> <build-dir>" >&2
  exit 2
fi
kind=$1
src=$(cd "$2" && pwd)
build=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
jobs=${STRATA_SANITIZE_JOBS:-$(nproc)}

case "$kind" in
  address,undefined | thread) ;;
  *) echo "$0: unknown sanitizer kind '$kind'; use address,undefined or thread" >&2; exit 2 ;;
esac

# The gtest filter: TSan runs the concurrent tests (tsan_filter.txt), ASan+UBSan every test;
# neither runs the `Stress` ones.
if [[ "$kind" == thread ]]; then
  filter=$(grep -v '^[[:space:]]*#' "$here/tsan_filter.txt" | tr -d '[:blank:]' | grep -v '^$' |
           paste -sd: -)
  filter="${filter}-*Stress*"
else
  filter="-*Stress*"
fi

# defines_matching_test <file> <ERE>: whether <file> declares a test (TEST, TEST_F, TEST_P, ...,
# or an instantiation) whose suite or name matches <ERE>; a declaration may span lines.
defines_matching_test() {
  awk -v re="$2" '
    /^[[:space:]]*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|INSTANTIATE_TEST_SUITE_P)[[:space:]]*\(/ {
      decl = ""; open = 1 }
    open { decl = decl $0
           if (index(decl, ")")) {
             open = 0; sub(/^[^(]*\(/, "", decl); sub(/\).*/, "", decl); gsub(/[[:space:]]/, "", decl)
             n = split(decl, part, ",")
             if (part[1] ~ re || (n > 1 && part[2] ~ re)) { found = 1; exit } } }
    END { exit !found }' "$1"
}

# A TSan tree compiles only the test sources that hold the tests it runs (18 of 117 files on
# 2026-11-28; the library is built whole), through STRATA_TEST_SOURCES. The filter's positive
# patterns become one ERE ('*' -> '.*'); a pattern with other glob characters keeps every file.
test_sources=()
if [[ "$kind" == thread ]]; then
  positive=${filter%%-*}
  if [[ "$positive" =~ [?\[] ]]; then
    test_sources=()
  else
    regex="^($(echo "$positive" | tr ':' '\n' | grep -v '^$' | sed 's/\./\\./g; s/\*/.*/g' |
               paste -sd'|' -))$"
    for file in "$src"/tests/*/*_test.cc; do
      if defines_matching_test "$file" "$regex"; then test_sources+=("${file#"$src"/tests/}"); fi
    done
  fi
fi

# The module binaries to build and run: only those with test sources (in this tree).
modules=(core storage memory parallel models scheduler embed)  # parallel: its single-process tests (the mpirun ones run unsanitized)
targets=()
for m in "${modules[@]}"; do
  if [[ ${#test_sources[@]} -gt 0 ]]; then
    if printf '%s\n' "${test_sources[@]}" | grep -q "^$m/"; then targets+=("strata_${m}_tests"); fi
  elif compgen -G "$src/tests/$m/*_test.cc" > /dev/null; then
    targets+=("strata_${m}_tests")
  fi
done
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "$0: no module tests under $src/tests; nothing to sanitize" >&2
  exit 1
fi

# clang-16 (installed for the fuzz targets) when present: it builds the sanitized trees about a
# third faster than GCC 12 at -O1 (ASan + UBSan, every module's tests on 2 cores: 781 s vs
# 1177 s, 2026-11-26), the largest part of CI's time. STRATA_SANITIZE_CC/CXX choose another.
if [[ -n "${STRATA_SANITIZE_CXX:-}" ]]; then
  export CC=${STRATA_SANITIZE_CC:-$CC} CXX=$STRATA_SANITIZE_CXX
elif command -v clang++-16 > /dev/null && command -v clang-16 > /dev/null; then
  export CC=clang-16 CXX=clang++-16
fi
echo "== sanitize $kind: compilers ${CC:-cc} / ${CXX:-c++}"

generator_args=()
if [[ -n "${CMAKE_GENERATOR:-}" ]]; then generator_args=(-G "$CMAKE_GENERATOR"); fi

# -O0: the stage is nearly all build. On 2 cores (2026-11-28) the ASan+UBSan tree built in 792 s
# and its tests ran in 319 s, against ~24 min and 105 s at -O1.
opt=-O0
# Line tables are all a report's stack needs (file:line per frame); with full debug info the
# ASan scheduler test binary was 122 MB against 79 MB (2026-11-28). GCC's nearest is -g1.
debug=-gline-tables-only
if [[ "${CXX:-c++}" != *clang* ]]; then debug=-g1; fi
# Unity sources (CMAKE_UNITY_BUILD) for the libraries: at -O0 most of a file's compile is parsing
# the headers it shares with its neighbours (the ASan tree: 792 -> 531 s with the line tables);
# the test files still compile one by one (tests/CMakeLists.txt).
echo "== sanitize $kind: configuring $build ($opt)"
cmake -S "$src" -B "$build" "${generator_args[@]}" \
  -DSTRATA_SANITIZE="$kind" -DSTRATA_WITH_CUDA=OFF -DSTRATA_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSTRATA_TEST_SOURCES="$(IFS=';'; echo "${test_sources[*]}")" \
  -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt $debug -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt $debug -DNDEBUG" \
  > "$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }

echo "== sanitize $kind: building ${targets[*]} (-j$jobs)"
start=$(date +%s)
cmake --build "$build" --target "${targets[@]}" -j"$jobs"
echo "== sanitize $kind: build took $(( $(date +%s) - start )) s"

# Sanitizer runtime options: stop at the first report with a non-zero exit.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:exitcode=23"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=24${UBSAN_EXTRA:+:$UBSAN_EXTRA}"
tsan_options="halt_on_error=1:second_deadlock_stack=1:exitcode=66"
if [[ -f "$here/tsan.supp" ]]; then tsan_options+=":suppressions=$here/tsan.supp"; fi
export TSAN_OPTIONS="$tsan_options"
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-2}
if [[ "$kind" == thread ]]; then
  # libtbb and libopenblas are not TSan-instrumented, so the synchronisation inside them is
  # invisible and their fork/join shows up as races in every parallel kernel (false positives;
  # tsan_tbb_serial.cc says why these are not suppressed instead). Run both single-threaded:
  # TBB through a preloaded global_control, OpenBLAS through its environment variable.
  preload="$build/tsan_tbb_serial.so"
  "${CXX:-c++}" -std=c++17 -O1 -fPIC -shared -o "$preload" "$here/tsan_tbb_serial.cc" -ltbb
  export LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}"
  export OPENBLAS_NUM_THREADS=1
fi

# Each binary runs as $jobs gtest shards side by side: a sanitized test waits on its own threads
# and disk often enough to leave a core idle about a third of the time (the ASan scheduler tests,
# 2026-11-28). The tests already run side by side under `ctest -j` in the default suite, so no two
# share a scratch path. Each shard's output is shown whole once it ends.
failed=()
for target in "${targets[@]}"; do
  binary="$build/tests/$target"
  echo "== sanitize $kind: $target --gtest_filter='$filter' ($jobs shards)"
  start=$(date +%s)
  pids=()
  for ((shard = 0; shard < jobs; shard++)); do
    (cd "$build/tests" && GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=$shard \
       "$binary" --gtest_filter="$filter" --gtest_brief=1 > "$build/$target.shard$shard.log" 2>&1) &
    pids+=($!)
  done
  rc=0
  for ((shard = 0; shard < jobs; shard++)); do
    wait "${pids[$shard]}" || rc=$?
    cat "$build/$target.shard$shard.log"
  done
  if [[ $rc -eq 0 ]]; then
    echo "== sanitize $kind: $target passed in $(( $(date +%s) - start )) s"
  else
    echo "== sanitize $kind: $target FAILED (exit $rc) in $(( $(date +%s) - start )) s" >&2
    failed+=("$target")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "== sanitize $kind: FAILED: ${failed[*]} (see the sanitizer report above)" >&2
  exit 1
fi
echo "== sanitize $kind: all passed"
