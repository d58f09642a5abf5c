#!/usr/bin/env bash
# Installs every Debian package that Strata's build, tests and benchmarks use.
# Idempotent: when everything is present it only checks (dpkg-query) and exits.
# Works as root, or as a user with sudo. Needs Debian 12 (bookworm) or newer.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake pkg-config git ca-certificates
  # core: logging, CLI, JSON, BLAS, threading
  libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev libopenblas-dev libtbb-dev
  # storage: io_uring, catalog, checksums
  liburing-dev librocksdb-dev libxxhash-dev
  # parallel: MPI
  libopenmpi-dev openmpi-bin
  # tests and benchmarks: GoogleTest, the PyTorch reference peer (torchvision: the zoo of
  # python/tests, the vit_b_16 benchmark), the disk's limit
  libgtest-dev libgmock-dev python3 python3-torch python3-torchvision python3-numpy fio
  # the Python package (python/): pybind11 and the headers of the Python it is built for
  pybind11-dev python3-dev
  # the layering and size check (tests/check_structure.sh): function extents
  universal-ctags
  # fuzzing (-DSTRATA_FUZZ=ON, tests/fuzz/): clang with libFuzzer and the sanitizer runtimes
  clang-16 libclang-rt-16-dev
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
