# Extra scheduler test entries (included by tests/CMakeLists.txt; sees strata_scheduler_tests).
# The CLI tests run the built `strata` binary.
add_dependencies(strata_scheduler_tests strata)

# `ctest -L stress`: the kill-and-resume loops with 100 and 200 kills instead of the default
# suite's 10.
add_test(NAME scheduler_kill_resume_stress
         COMMAND strata_scheduler_tests --gtest_filter=KillResume.RandomKills*)
set_tests_properties(scheduler_kill_resume_stress PROPERTIES
                     LABELS stress ENVIRONMENT STRATA_SCHED_KILLS=100 TIMEOUT 3600)
add_test(NAME scheduler_kill_resume_ckpt_every_stress
         COMMAND strata_scheduler_tests --gtest_filter=KillResume.CheckpointEveryTwoSteps*)
set_tests_properties(scheduler_kill_resume_ckpt_every_stress PROPERTIES
                     LABELS stress ENVIRONMENT STRATA_SCHED_KILLS=200 TIMEOUT 7200)

# The checkpoint record's fuzz entry function (tests/fuzz/), which fuzz_regressions_test.cc runs
# over its seeds and regressions.
target_sources(strata_scheduler_tests PRIVATE
               ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/checkpoint_record_fuzz.cc)
