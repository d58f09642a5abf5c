# Multi-rank tests of the MPI backend (included by tests/CMakeLists.txt), labels `parallel` and
# `mpi`: strata_parallel_mpi_tests (tests/parallel/mpi/*.cc, a gtest binary with its own main)
# runs under mpirun with 2 and 4 ranks, and once more (parallel_mpi_abort) to check that
# Comm::abort ends the job, through expect_exit.sh. Each entry has two timeouts, so a hung collective fails
# the test instead of hanging ctest: mpirun's own --timeout kills the job (OpenMPI), and
# ctest's TIMEOUT is the backstop.
# OpenMPI flags: --allow-run-as-root (containers run as root), --oversubscribe (more ranks than
# cores). Shared memory (the vader BTL, with CMA single copy) works as it comes on the build
# machine, so no --mca options are needed.
if(NOT MPI_C_FOUND OR NOT MPIEXEC_EXECUTABLE)
  message(STATUS "parallel: MPI or mpirun not found; the multi-rank tests (label mpi) are not "
                 "registered")
else()
  file(GLOB strata_mpi_test_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/mpi/*.cc)
  add_executable(strata_parallel_mpi_tests ${strata_mpi_test_srcs})
  target_link_libraries(strata_parallel_mpi_tests PRIVATE strata_parallel strata_models MPI::MPI_C
                        GTest::gtest)

  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE strata_mpiexec_version
                  ERROR_QUIET)
  set(strata_mpiexec_flags)
  if(strata_mpiexec_version MATCHES "Open MPI|OpenRTE")
    set(strata_mpiexec_flags --allow-run-as-root --oversubscribe --timeout 100)
  endif()
  foreach(np 2 4)
    add_test(NAME parallel_mpi_np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${strata_mpiexec_flags} ${MPIEXEC_NUMPROC_FLAG} ${np}
                     $<TARGET_FILE:strata_parallel_mpi_tests> --gtest_color=no)
    set_tests_properties(parallel_mpi_np${np} PROPERTIES LABELS "parallel;mpi" TIMEOUT 120
                         PROCESSORS ${np})
  endforeach()
  # Comm::abort on one rank ends the whole job with its code (7), while another rank waits in a
  # barrier with a 60 s timeout: it must end well before that (30 s allowed).
  find_program(STRATA_BASH bash REQUIRED)
  add_test(NAME parallel_mpi_abort
           COMMAND ${STRATA_BASH} ${CMAKE_CURRENT_LIST_DIR}/expect_exit.sh 7 30
                   ${MPIEXEC_EXECUTABLE} ${strata_mpiexec_flags} ${MPIEXEC_NUMPROC_FLAG} 2
                   $<TARGET_FILE:strata_parallel_mpi_tests> --abort-scenario)
  set_tests_properties(parallel_mpi_abort PROPERTIES LABELS "parallel;mpi" TIMEOUT 120
                       PROCESSORS 2)
endif()
