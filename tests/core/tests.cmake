# Extra core test entries (included by tests/CMakeLists.txt; sees strata_core_tests).
#
# The core fuzz targets' entry functions (tests/fuzz/), which fuzz_regressions_test.cc runs over
# the seed corpus and the regression inputs.
target_sources(strata_core_tests PRIVATE
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/safetensors_header_fuzz.cc
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/token_header_fuzz.cc
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/size_parser_fuzz.cc)
