# Extra storage test entries (included by tests/CMakeLists.txt; sees strata_storage_tests).
#
# The crash-consistency test re-runs a helper process and SIGKILLs it; the helper is built
# here and its path compiled into the test binary.
add_executable(strata_storage_crash_child ${CMAKE_CURRENT_SOURCE_DIR}/storage/crash_child.cc)
target_link_libraries(strata_storage_crash_child PRIVATE strata_storage)
target_include_directories(strata_storage_crash_child PRIVATE ${GTEST_INCLUDE_DIRS})
target_link_libraries(strata_storage_crash_child PRIVATE GTest::gtest)
add_dependencies(strata_storage_tests strata_storage_crash_child)
target_compile_definitions(strata_storage_tests PRIVATE
                           STRATA_CRASH_CHILD="$<TARGET_FILE:strata_storage_crash_child>")

# `ctest -L stress`: the kill loop with 1000 kills instead of the default suite's 100.
add_test(NAME storage_crash_consistency_stress
         COMMAND strata_storage_tests --gtest_filter=CrashConsistency.*)
set_tests_properties(storage_crash_consistency_stress PROPERTIES
                     LABELS stress ENVIRONMENT STRATA_CRASH_KILLS=1000 TIMEOUT 3600)

# The catalog fuzz target's entry function (tests/fuzz/), which fuzz_regressions_test.cc runs
# over the seed corpus and the regression inputs.
target_sources(strata_storage_tests PRIVATE
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/catalog_record_fuzz.cc)
