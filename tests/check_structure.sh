#!/usr/bin/env bash
# The structure rules that docs/memory.md and docs/scheduler.md promise, as a test (ctest entry
# `structure`, label tools). They hold on every floor: every top-level folder that holds C or C++
# sources (core, storage, memory, parallel, scheduler, tools, embed, python, include, examples,
# and any folder added later, which must first get a row in the include table below). tests/ and
# build trees (build*/, or any folder with a CMakeCache.txt: generated files) are exempt.
#  - includes point only down the floors: core <- storage <- memory <- scheduler <- tools, and
#    parallel between core and scheduler, embed (the C API) over memory, the Python binding over
#    the public C header; so no cycles. A folder with sources and no row in the table fails;
#  - inside scheduler/ (acyclic_dirs) the includes between its files form no cycle;
#  - the scheduler includes no storage/ header (memory/ owns the page store);
#  - core/, storage/, memory/, parallel/ and scheduler/ name no command-line flag in a string
#    literal (tools/ and embed/ word the options they mention: core/util/option.h);
#  - the runtime names no model: over scheduler/, memory/, parallel/ and embed/, only
#    scheduler/model_registry.cc names a family (GPT-2, LLaMA, ...), and a model's sub-room of
#    models/ includes no other's (docs/models.md);
#  - no source file in any of these folders is over 400 lines, and no function is over 60 lines;
#  - one naming convention for functions: types, free functions and static member functions
#    (factories such as Create/Open) are PascalCase; every other member function is snake_case.
# Usage: check_structure.sh SOURCE_DIR. Exit 0 when every rule holds; 1 with each violation.
set -uo pipefail
cd "$1" || exit 2
fail=0
say() { echo "structure: $*"; fail=1; }

# What each floor may include (a folder always includes itself). include/ is the public C
# header (strata.h, included by its bare name everywhere); examples/ use only that header.
declare -A allowed=(
  [core]="core"
  [storage]="core storage"
  [memory]="core storage memory"
  [parallel]="core parallel"
  [models]="core models"
  [scheduler]="core memory parallel models scheduler"
  [bench]="core storage memory parallel models scheduler bench"
  [stress]="core storage memory parallel models scheduler stress"
  [tools]="core storage memory parallel models scheduler bench stress tools"
  [embed]="core memory embed"
  [python]="python"
  [include]=""
  [examples]=""
)

# Every top-level folder with C or C++ sources, tests/ and build outputs aside.
source_dirs=()
for dir in */; do
  dir=${dir%/}
  [[ $dir == tests || $dir == build* || -f $dir/CMakeCache.txt ]] && continue  # build trees
  # What git ignores is made, not written: an install prefix, a scratch tree.
  git check-ignore -q "$dir" 2>/dev/null && continue
  [[ -n $(find "$dir" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.c' \
            -o -name '*.cpp' \) -print -quit) ]] || continue
  source_dirs+=("$dir")
  [[ -v "allowed[$dir]" ]] ||
    say "$dir/ holds sources but has no row in check_structure.sh's include table (say what it may include)"
done
sources() {  # every source file of the source folders, one per line
  find "${source_dirs[@]}" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.c' \
       -o -name '*.cpp' \) | sort
}
dir_alt=$(IFS='|'; echo "${source_dirs[*]}")

for dir in "${source_dirs[@]}"; do
  [[ -v "allowed[$dir]" ]] || continue
  while IFS=: read -r file line target; do
    [[ $target == "$dir" || " ${allowed[$dir]} " == *" $target "* ]] ||
      say "$file:$line includes $target/ (a $dir/ file may include only: ${allowed[$dir]:-its own folder and strata.h})"
  done < <(grep -rnoE "#include \"($dir_alt)/" "$dir" --include='*.h' --include='*.cc' \
             --include='*.cu' --include='*.c' --include='*.cpp' |
           sed -E 's/#include "([a-z_]+)\//\1/')
done

# Inside a folder of acyclic_dirs, the includes between its files form no cycle either. A unit
# is a file's path without its extension (foo.h and foo.cc are one), so a factory in foo.cc that
# includes what includes foo.h is a loop: the factory belongs in a file of its own.
acyclic_dirs=(scheduler)
for dir in "${acyclic_dirs[@]}"; do
  [[ -d $dir ]] || continue
  loop=$(find "$dir" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \) | sort |
         while IFS= read -r file; do
           unit=${file%.*}
           grep -oE "#include \"$dir/[a-z_0-9/]+\.h\"" "$file" |
             sed -E 's/#include "(.*)\.h"/\1/' |
             while IFS= read -r target; do [[ $target != "$unit" ]] && echo "$unit $target"; done
         done | sort -u | tsort 2>&1 >/dev/null | grep -v 'input contains a loop' |
         sed -E 's/^tsort: //' | sort -u | xargs)
  [[ -z $loop ]] ||
    say "$dir/ includes itself in a circle (units on a loop: $loop); move what closes it" \
        "into a file of its own"
done

# The floors below the edges state facts and name an option by its mention (Note [Options in
# messages] in core/util/option.h); tools/ words it as a flag, embed/ as an option key. A string
# literal holding flag text ("--" and a letter) in one of them fails; comments may name flags.
flag_floors=()
for dir in core storage memory parallel models scheduler; do [[ -d $dir ]] && flag_floors+=("$dir"); done
while IFS= read -r hit; do
  say "${hit%%/*}/ names a command-line flag: $hit"
done < <(find "${flag_floors[@]}" /dev/null -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cu' \) |
         sort | xargs -r perl -ne '
           # Tokens left to right: a string literal, a character literal or a // comment (the
           # rest of the line); a string literal with "--" and a letter is flag text.
           my $hit = 0;
           while (/("(?:\\.|[^"\\])*")|(\x27(?:\\.|[^\x27\\])*\x27)|(\/\/.*$)/g) {
             last if defined $3;
             if (defined $1 && $1 =~ /--[a-z][a-z-]+/) { $hit = 1; last }
           }
           print "$ARGV:$.: $_" if $hit;
           close ARGV if eof;')

while IFS= read -r file; do
  lines=$(wc -l < "$file")
  (( lines <= 400 )) || say "$file has $lines lines (at most 400)"
done < <(sources)

if ! command -v ctags >/dev/null 2>&1 || ! ctags --version 2>/dev/null | grep -q Universal; then
  echo "structure: universal-ctags is missing (tools/install-deps.sh installs it)"
  exit 1
fi
while IFS=$'\t' read -r name file start end; do
  (( end - start + 1 <= 60 )) || say "$file:$start $name has $((end - start + 1)) lines (at most 60)"
done < <(sources | ctags --languages=C,C++ --langmap=C++:+.cu --c-kinds=f --c++-kinds=f \
           --fields=+ne -L - -o - 2>/dev/null |
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

# docs/rooms.md, the map of the rooms: a row per source folder, and its "may include" cell (the
# folders in backticks, or "(itself)") exactly the table above without the folder itself.
map=docs/rooms.md
if [[ ! -f $map ]]; then
  say "$map is missing (the map of the rooms: a row per source folder)"
else
  for dir in "${source_dirs[@]}"; do
    row=$(grep -E "^\| \`$dir/\` \|" "$map")
    if [[ -z $row ]]; then
      say "$map has no row for $dir/ (say what it holds and what it may include)"
      continue
    fi
    cell=$(awk -F'|' '{ print $4 }' <<<"$row" | grep -oE '`[a-z_]+`' | tr -d '`' | sort | xargs)
    want=$(tr ' ' '\n' <<<"${allowed[$dir]:-}" | grep -vx "$dir" | grep -v '^$' | sort | xargs)
    [[ $cell == "$want" ]] ||
      say "$map's row for $dir/ says it may include '${cell:-(itself)}', the include table '${want:-(itself)}'"
  done
fi

(( fail == 0 )) && echo "structure: every rule holds"
# The runtime knows the model interface (core/nn/model.h), never a family: the families live in
# models/<family>/ and one registry file turns a run's flags into one of them.
model_names='Gpt|GPT|gpt_|Llama|llama'
while IFS= read -r file; do
  [[ $file == scheduler/model_registry.cc ]] && continue
  say "$file names a model family (${model_names//|/, }, or includes models/): the runtime" \
      "knows the model interface" \
      "(core/nn/model.h) only; a family's code belongs in models/<family>/, its choice in" \
      "scheduler/model_registry.cc"
done < <(for d in scheduler memory parallel embed; do [[ -d $d ]] && echo "$d"; done |
           xargs -r grep -rlE "$model_names|#include \"models/" --include='*.h' --include='*.cc' \
             --include='*.cu' | sort)
for room in models/*/; do
  room=${room%/}
  while IFS=: read -r file line target; do
    [[ $target == "$room" ]] ||
      say "$file:$line includes $target/ (a model's sub-room includes core/ and itself only)"
  done < <(grep -rnoE '#include "models/[a-z_0-9]+/' "$room" --include='*.h' --include='*.cc' |
           sed -E 's/#include "(models\/[a-z_0-9]+)\//\1/')
done

exit $fail
