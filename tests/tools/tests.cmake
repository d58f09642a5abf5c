# Extra tools test entries (included by tests/CMakeLists.txt; sees strata_tools_tests).
# tools/ builds the strata binary, not a library: the budget wording's one source file is
# compiled into the test binary to test it as a unit.
target_sources(strata_tools_tests PRIVATE ${PROJECT_SOURCE_DIR}/tools/budget_message.cc
                                          ${PROJECT_SOURCE_DIR}/tools/option_words.cc)
# `strata stress` and its fault injection: the SPEC parser and the stress judge are unit-tested
# from the soak's library (stress/).
target_link_libraries(strata_tools_tests PRIVATE strata_stress strata_storage CLI11::CLI11
                                                 nlohmann_json::nlohmann_json)

# `ctest -L stress`: the soak for 30 minutes instead of the default suite's 1.
add_test(NAME tools_stress_soak_30min COMMAND strata_tools_tests --gtest_filter=StressSoak.Nothing*)
set_tests_properties(tools_stress_soak_30min PROPERTIES
                     LABELS stress ENVIRONMENT STRATA_STRESS_MINUTES=30 TIMEOUT 2700)

# `strata train --dp` under mpirun (train_dp_test.cc): the launcher found at configure time.
if(MPIEXEC_EXECUTABLE)
  target_compile_definitions(strata_tools_tests PRIVATE STRATA_MPIEXEC="${MPIEXEC_EXECUTABLE}")
endif()

# The README's sample outputs (tools/readme_samples.py): the two quick ones run again and every
# loss, learning rate and norm README.md shows must be printed again. Needs the built tree and
# mpirun; the others are checked by hand (`tools/readme_samples.py check`).
add_test(NAME readme_samples
         COMMAND /usr/bin/python3 ${PROJECT_SOURCE_DIR}/tools/readme_samples.py check dp2 embed
                 --build ${PROJECT_BINARY_DIR})
set_tests_properties(readme_samples PROPERTIES LABELS tools TIMEOUT 600 RUN_SERIAL ON
                     REQUIRED_FILES $<TARGET_FILE:strata>)
