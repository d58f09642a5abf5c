# The installed C API, used the way a user would (tests/embed/outside_project_test.sh): install
# this build tree into a temporary prefix, build examples/embed_c outside the tree against it,
# run it. Needs the built tree (the default build makes libstrata.so); ctest cannot build, so
# the library is a required file and the entry reports "Not Run" until it exists.
add_test(NAME embed_outside_project
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/outside_project_test.sh ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR})
set_tests_properties(embed_outside_project PROPERTIES
  LABELS embed TIMEOUT 600
  REQUIRED_FILES $<TARGET_FILE:strata_shared>
  ENVIRONMENT CMAKE=${CMAKE_COMMAND})

# The memory of an embedder beyond its budgets (embedder_memory_test.cc): a C program linked
# against libstrata.so, as an embedder's is, that the test runs and reads.
add_executable(strata_embedder_memory_probe ${CMAKE_CURRENT_LIST_DIR}/embedder_memory_probe.c)
set_target_properties(strata_embedder_memory_probe PROPERTIES
  C_STANDARD 11 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(strata_embedder_memory_probe PRIVATE -Wall -Wextra -Wpedantic
                       $<$<BOOL:${STRATA_WERROR}>:-Werror>)
target_link_libraries(strata_embedder_memory_probe PRIVATE strata_shared)
# A sanitized libstrata.so leaves its sanitizer runtime to the program (embed/CMakeLists.txt),
# and clang's C driver links only the C half of UBSan's (no __ubsan_vptr_type_cache): linked as
# C++ there, the probe gets all of it. (The test skips under sanitizers; the probe must link.)
if(STRATA_SANITIZE)
  set_target_properties(strata_embedder_memory_probe PROPERTIES LINKER_LANGUAGE CXX)
endif()
add_dependencies(strata_embed_tests strata_embedder_memory_probe)
target_compile_definitions(strata_embed_tests PRIVATE
  STRATA_EMBEDDER_MEMORY_PROBE="$<TARGET_FILE:strata_embedder_memory_probe>")
