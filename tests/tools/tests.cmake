# Extra tools test entries (included by tests/CMakeLists.txt; sees strata_tools_tests).
# tools/ builds the strata binary, not a library: the budget wording's one source file is
# compiled into the test binary to test it as a unit.
target_sources(strata_tools_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/budget_message.cc)
# `strata stress` and --inject-faults: the SPEC parser and the stress judge are unit-tested, so
# their sources are compiled in too; they need the storage layer's FaultInjector.
target_sources(strata_tools_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/fault_spec.cc
                                          ${PROJECT_SOURCE_DIR}/tools/stress_judge.cc)
target_link_libraries(strata_tools_tests PRIVATE strata_storage CLI11::CLI11
                                                 nlohmann_json::nlohmann_json)

# `ctest -L stress`: the soak for 30 minutes instead of the default suite's 1.
add_test(NAME tools_stress_soak_30min COMMAND strata_tools_tests --gtest_filter=StressSoak.Nothing*)
set_tests_properties(tools_stress_soak_30min PROPERTIES
                     LABELS stress ENVIRONMENT STRATA_STRESS_MINUTES=30 TIMEOUT 2700)

# `strata train --dp` under mpirun (train_dp_test.cc): the launcher found at configure time.
if(MPIEXEC_EXECUTABLE)
  target_compile_definitions(strata_tools_tests PRIVATE STRATA_MPIEXEC="${MPIEXEC_EXECUTABLE}")
endif()
