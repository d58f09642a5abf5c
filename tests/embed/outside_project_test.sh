#!/usr/bin/env bash
# The C API as a user gets it (ctest entry embed_outside_project, label embed): installs the
# build tree into a temporary prefix, checks the installed layout (cmake/StrataPackage.cmake)
# and the library's exports, then builds examples/embed_c outside the tree three ways
# (find_package, CMake's pkg-config module, a bare cc with pkg-config) and runs each build.
# Usage: outside_project_test.sh BUILD_DIR SOURCE_DIR   ($CMAKE: the cmake to use)
set -euo pipefail
build=$(realpath "$1")
src=$(realpath "$2")
cmake=${CMAKE:-cmake}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-outside.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

step "install $build into $prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" ||
  { cat "$tmp/install.log"; fail "cmake --install failed (is it built? cmake --build $build)"; }

step "installed layout"
lib=$prefix/lib/libstrata.so
for path in include/strata.h lib/libstrata.so lib/pkgconfig/strata.pc \
            lib/cmake/Strata/StrataConfig.cmake lib/cmake/Strata/StrataConfigVersion.cmake; do
  [[ -e $prefix/$path ]] || fail "the install has no $path"
done
soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ -n $soname && -e $prefix/lib/$soname ]] || fail "the soname '$soname' is not installed"
# Everything installed must belong to the package: the header, the library, its pkg-config and
# CMake files, the CLI and the Python package; nothing else (no static modules, no test files).
layout='include/strata\.h|lib/libstrata\.so(\.[0-9]+)*|lib/pkgconfig/strata\.pc'
layout+='|lib/cmake/Strata/[^/]+\.cmake|bin/strata|lib/python3/dist-packages/strata/.*'
unexpected=$(find "$prefix" \( -type f -o -type l \) -printf '%P\n' |
             grep -vE "^($layout)$" || true)
[[ -z $unexpected ]] || fail "the install has files outside the package's layout:"$'\n'"$unexpected"

step "exports of $soname"
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort)
foreign=$(grep -v '^strata_' <<< "$exported" || true)
[[ -z $foreign ]] ||
  fail "libstrata.so exports symbols outside the C API:"$'\n'"$(head -20 <<< "$foreign")"
# Every function strata.h declares must be defined by the library.
declared=$(grep -oE '\bstrata_[a-z0-9_]+\(' "$prefix/include/strata.h" | tr -d '(' | sort -u)
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
[[ -z $missing ]] || fail "libstrata.so does not define these strata.h functions:"$'\n'"$missing"

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
[[ $(pkg-config --variable=prefix strata) == "$prefix" ]] ||
  fail "strata.pc names prefix '$(pkg-config --variable=prefix strata)', expected '$prefix'"

# The header must be clean C11 for a user who builds with warnings as errors.
cflags=(-std=c11 -Wall -Wextra -Wpedantic -Werror)
configure_and_build() {  # NAME CMAKE_ARGS...: examples/embed_c built in $tmp/NAME
  local name=$1; shift
  step "build examples/embed_c ($name)"
  if ! { "$cmake" -S "$src/examples/embed_c" -B "$tmp/$name" -DCMAKE_BUILD_TYPE=Release \
           -DCMAKE_C_FLAGS="${cflags[*]}" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" &&
         "$cmake" --build "$tmp/$name"; } > "$tmp/$name.log" 2>&1; then
    cat "$tmp/$name.log"
    fail "examples/embed_c did not build through $name"
  fi
}
configure_and_build find_package -DCMAKE_PREFIX_PATH="$prefix"
configure_and_build pkg_config_cmake -DSTRATA_EMBED_USE_PKGCONFIG=ON
step "build examples/embed_c (cc and pkg-config)"
mkdir -p "$tmp/pkg_config_cc"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc "${cflags[@]}" $(pkg-config --cflags strata) "$src/examples/embed_c/embed_c.c" \
  -o "$tmp/pkg_config_cc/embed_c" $(pkg-config --libs strata) -lm ||
  fail "examples/embed_c did not build with cc and pkg-config"

run() {  # NAME [ENV...]: runs $tmp/NAME/embed_c on an empty NVMe directory
  local name=$1; shift
  local binary=$tmp/$name/embed_c
  step "run $name"
  local loaded
  loaded=$(env "$@" ldd "$binary" | awk '/libstrata\.so/ {print $3}')
  [[ $loaded == "$prefix"/lib/* ]] ||
    fail "$name loads libstrata from '$loaded', not from $prefix/lib"
  mkdir "$tmp/nvme-$name"
  env "$@" timeout 120 "$binary" "$tmp/nvme-$name" || fail "$name's embed_c failed (exit $?)"
}
run find_package                    # the CMake builds find the library through their RPATH
run pkg_config_cmake
run pkg_config_cc LD_LIBRARY_PATH="$prefix/lib"
echo "PASS"
