#!/usr/bin/env bash
# The structure rules that docs/memory.md and docs/scheduler.md promise, as a test (ctest entry
# `structure`, label tools):
#  - includes point only down the layers: core <- storage <- memory <- scheduler <- tools, and
#    parallel between core and scheduler, embed (the C API) over memory; so no cycles;
#  - the scheduler includes no storage/ header (memory/ owns the page store);
#  - memory/ names no command-line flag (tools/ words budget errors);
#  - no source file in memory/, scheduler/ or embed/ is over 400 lines, and no function in
#    memory/, scheduler/, embed/ or tools/ is over 60 lines (tests and generated tables are exempt);
#  - one naming convention for functions: types, free functions and static member functions
#    (factories such as Create/Open) are PascalCase; every other member function is snake_case.
# Usage: check_structure.sh SOURCE_DIR. Exit 0 when every rule holds; 1 with each violation.
set -uo pipefail
cd "$1" || exit 2
fail=0
say() { echo "structure: $*"; fail=1; }

declare -A allowed=(
  [core]="core"
  [storage]="core storage"
  [memory]="core storage memory"
  [parallel]="core parallel"
  [scheduler]="core memory parallel scheduler"
  [bench]="core storage memory parallel scheduler bench"
  [stress]="core storage memory parallel scheduler stress"
  [tools]="core storage memory parallel scheduler bench stress tools"
  [embed]="core memory embed"
)
for dir in "${!allowed[@]}"; do
  [[ -d $dir ]] || continue
  while IFS=: read -r file line target; do
    [[ " ${allowed[$dir]} " == *" $target "* ]] ||
      say "$file:$line includes $target/ (a $dir/ file may include only: ${allowed[$dir]})"
  done < <(grep -rnoE '#include "(core|storage|memory|parallel|scheduler|bench|stress|tools|embed)/' "$dir" \
             --include='*.h' --include='*.cc' --include='*.cu' |
           sed -E 's/#include "([a-z]+)\//\1/')
done

while IFS= read -r hit; do
  say "memory/ names a command-line flag: $hit"
done < <(grep -rnE '"[^"]*--[a-z][a-z-]+' memory --include='*.h' --include='*.cc')

for file in memory/*.h memory/*.cc scheduler/*.h scheduler/*.cc embed/*.h embed/*.cc; do
  lines=$(wc -l < "$file")
  (( lines <= 400 )) || say "$file has $lines lines (at most 400)"
done

if ! command -v ctags >/dev/null 2>&1 || ! ctags --version 2>/dev/null | grep -q Universal; then
  echo "structure: universal-ctags is missing (tools/install-deps.sh installs it)"
  exit 1
fi
while IFS=$'\t' read -r name file start end; do
  (( end - start + 1 <= 60 )) || say "$file:$start $name has $((end - start + 1)) lines (at most 60)"
done < <(ctags --languages=C++ --c++-kinds=f --fields=+ne -o - memory/*.cc scheduler/*.cc \
           tools/*.cc memory/*.h scheduler/*.h tools/*.h embed/*.cc embed/*.h 2>/dev/null |
         awk -F'\t' '{l=""; e=""; for (i=4;i<=NF;i++) { if ($i ~ /^line:/) l=substr($i,6);
                      if ($i ~ /^end:/) e=substr($i,5) } if (l != "" && e != "") print $1 "\t" $2 "\t" l "\t" e}')

# Member functions named in PascalCase that are not static (constructors and operators aside,
# and overrides of a library's virtual functions, e.g. rocksdb::Logger::Logv, whose names are the
# library's).
while IFS=$'\t' read -r name file line cls; do
  decl=$(sed -n "${line}p" "$file")
  # Out-of-class definitions (Class::Name) are judged at their declaration, where `static` is.
  [[ $decl == *"$cls::$name"* ]] && continue
  [[ $decl =~ (^|[^a-z_])static([^a-z_]|$) ]] && continue
  # The declaration up to its body or semicolon (parameters may wrap), for `override`.
  whole=$(sed -n "${line},$((line + 4))p" "$file" | awk '{ print } /[{;]/ { exit }')
  [[ $whole =~ \)[[:space:]]*(const[[:space:]]+)?(noexcept[[:space:]]+)?override([^a-z_]|$) ]] && continue
  say "$file:$line $cls::$name is a member function in PascalCase (methods are snake_case)"
done < <(ctags --languages=C++ --c++-kinds=fp --fields=+nKs -o - \
           $(ls core/*/*.h core/*/*.cc core/*/*.cu storage/*.h storage/*.cc memory/*.h memory/*.cc \
                parallel/*.h parallel/*.cc scheduler/*.h scheduler/*.cc tools/*.h tools/*.cc \
                2>/dev/null) 2>/dev/null |
         awk -F'\t' '{cls=""; l=""; for (i=4;i<=NF;i++) { if ($i ~ /^(class|struct):/) cls=$i;
                      if ($i ~ /^line:/) l=substr($i,6) } if (cls == "") next;
                      sub(/^(class|struct):/, "", cls); n=split(cls, a, "::"); c=a[n];
                      if ($1 == c || $1 ~ /^~/ || $1 ~ /^operator/ || $1 !~ /^[A-Z]/) next;
                      print $1 "\t" $2 "\t" l "\t" c}')

(( fail == 0 )) && echo "structure: every rule holds"
exit $fail
