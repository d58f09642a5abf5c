#!/usr/bin/env bash
# README command (2): install, build, and run the whole default test suite (unit, CLI and
# PyTorch reference tests; not the `stress` or `sanitize` labels), ending in ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
ctest --test-dir build --label-exclude 'sanitize|stress' --output-on-failure -j2
