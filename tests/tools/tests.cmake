# Extra tools test entries (included by tests/CMakeLists.txt; sees strata_tools_tests).
# tools/ builds the strata binary, not a library: the budget wording's one source file is
# compiled into the test binary to test it as a unit.
target_sources(strata_tools_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/budget_message.cc)
