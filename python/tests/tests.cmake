# strata.torch's tests (labels `embed` and `python`): /usr/bin/python3 (Debian's, with python3-torch) runs
# each with PYTHONPATH=build/python, the package as built. Each gets an empty work directory
# under the build tree for its NVMe pages.
set(strata_py_tests_src ${CMAKE_CURRENT_SOURCE_DIR}/tests)
set(strata_py_tests_work ${CMAKE_CURRENT_BINARY_DIR}/tests)

# strata_py_test(<name> <script> <timeout s>)
function(strata_py_test name script timeout)
  add_test(NAME python.${name}
           COMMAND "${STRATA_PYTHON}" ${strata_py_tests_src}/${script}
                   ${strata_py_tests_work}/${name})
  set_tests_properties(python.${name} PROPERTIES
    LABELS "embed;python" TIMEOUT ${timeout}
    ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}:${strata_py_tests_src}")
endfunction()

strata_py_test(exactness test_exactness.py 300)
strata_py_test(zero_copy test_zero_copy.py 120)
strata_py_test(bad_use test_bad_use.py 120)
strata_py_test(memory test_memory.py 300)
strata_py_test(save_load test_save_load.py 120)
strata_py_test(usage test_usage.py 120)
strata_py_test(resume_after_kill test_resume_after_kill.py 300)
strata_py_test(reads test_reads.py 300)
strata_py_test(state_dict test_state_dict.py 300)
strata_py_test(page_layout test_page_layout.py 120)
strata_py_test(checkpoint_record test_checkpoint_record.py 120)

# The zoo (test_zoo.py): each model its own entry, so that ctest -j runs them side by side and
# names the one that fails. vit_b_16 moves ~40 GB through its NVMe directory (86M parameters at
# 4x host_mem) and takes the longest (75 s on the 2-core build machine, loaded).
foreach(model transformer_encoder transformer_decoder tied_functional resnet18 vit_b_16 lstm
        checkpoint)
  add_test(NAME python.zoo.${model}
           COMMAND "${STRATA_PYTHON}" ${strata_py_tests_src}/test_zoo.py ${model}
                   ${strata_py_tests_work}/zoo_${model})
  set_tests_properties(python.zoo.${model} PROPERTIES
    LABELS "embed;python" TIMEOUT 600
    ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}:${strata_py_tests_src}")
endforeach()

# The installed package, from an install prefix of its own.
add_test(NAME python.installed
         COMMAND "${STRATA_PYTHON}" ${strata_py_tests_src}/test_installed.py ${CMAKE_COMMAND}
                 ${CMAKE_BINARY_DIR} ${strata_py_tests_work}/installed)
set_tests_properties(python.installed PROPERTIES LABELS "embed;python" TIMEOUT 120)

# The example of docs/embedding.md, as a user runs it: an empty NVMe directory.
set(example_work ${strata_py_tests_work}/example)
add_test(NAME python.example_torch_offload
         COMMAND sh -c "rm -rf '${example_work}' && mkdir -p '${example_work}/nvme' && \
'${STRATA_PYTHON}' '${PROJECT_SOURCE_DIR}/examples/torch_offload.py' '${example_work}/nvme' \
'${example_work}/model.safetensors'")
set_tests_properties(python.example_torch_offload PROPERTIES
  LABELS "embed;python" TIMEOUT 120 ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}")

# The README's torchvision example (resnet18 through st.offload), the same way; its NVMe
# store (3 GB) goes once it passed.
set(tv_work ${strata_py_tests_work}/example_torchvision)
add_test(NAME python.example_torchvision_offload
         COMMAND sh -c "rm -rf '${tv_work}' && mkdir -p '${tv_work}/nvme' && \
'${STRATA_PYTHON}' '${PROJECT_SOURCE_DIR}/examples/torchvision_offload.py' '${tv_work}/nvme' \
'${tv_work}/model.pt' && rm -rf '${tv_work}/nvme'")
set_tests_properties(python.example_torchvision_offload PROPERTIES
  LABELS "embed;python" TIMEOUT 300 ENVIRONMENT "PYTHONPATH=${CMAKE_CURRENT_BINARY_DIR}")
