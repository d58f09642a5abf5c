#!/usr/bin/env bash
# Installs what is missing (tools/install-deps.sh), then configures and builds Strata (Release)
# in ./build. Extra arguments go to CMake's configure step, e.g. -DSTRATA_WITH_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
