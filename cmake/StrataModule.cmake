# strata_module(<name> DEPS <targets...>): one static library per top-level folder, built
# from every .cc under it (and .cu when the cuda backend is on). A folder with no sources yet
# is an INTERFACE library so that dependents link the same way before and after it grows.
function(strata_module name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER srcs EXCLUDE REGEX ".*_cuda\\.cc$")
  if(STRATA_CUDA_ENABLED)
    file(GLOB_RECURSE cuda_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cu
         ${CMAKE_CURRENT_SOURCE_DIR}/*_cuda.cc)
    list(APPEND srcs ${cuda_srcs})
  endif()
  if(srcs)
    add_library(strata_${name} STATIC ${srcs})
    target_include_directories(strata_${name} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(strata_${name} PUBLIC ${ARG_DEPS})
  else()
    add_library(strata_${name} INTERFACE)
    target_include_directories(strata_${name} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(strata_${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()
