# Extra scheduler test entries (included by tests/CMakeLists.txt; sees strata_scheduler_tests).
# The CLI tests run the built `strata` binary.
add_dependencies(strata_scheduler_tests strata)
