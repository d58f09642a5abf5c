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
