# What `cmake --install <build> --prefix P` puts under P for embedders (docs/embedding.md):
#   P/include/strata.h
#   P/lib/libstrata.so*                       (the destination is `lib` on every distribution,
#                                              not lib/<multiarch>: the layout is a contract)
#   P/lib/pkgconfig/strata.pc                 (pkg-config strata)
#   P/lib/cmake/Strata/StrataConfig.cmake     (find_package(Strata) -> Strata::strata)
# Only the shared library and the header: the static modules stay build-tree only.
include(CMakePackageConfigHelpers)

set(strata_cmake_dir lib/cmake/Strata)

install(FILES ${PROJECT_SOURCE_DIR}/include/strata.h DESTINATION include)
install(TARGETS strata_shared EXPORT StrataTargets LIBRARY DESTINATION lib)
install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${strata_cmake_dir}
        FILE StrataTargets.cmake)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/StrataConfig.cmake.in
  ${PROJECT_BINARY_DIR}/StrataConfig.cmake INSTALL_DESTINATION ${strata_cmake_dir})
# 0.x: a new minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/StrataConfig.cmake
              ${PROJECT_BINARY_DIR}/StrataConfigVersion.cmake DESTINATION ${strata_cmake_dir})

# strata.pc names its prefix literally, so it is written at install time, when the prefix
# (--prefix P, not the configure-time CMAKE_INSTALL_PREFIX) is known.
install(CODE "set(STRATA_PC_TEMPLATE \"${PROJECT_SOURCE_DIR}/cmake/strata.pc.in\")
              set(STRATA_PC_STAGING \"${PROJECT_BINARY_DIR}/strata.pc.install\")
              set(STRATA_VERSION \"${PROJECT_VERSION}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/StrataInstallPc.cmake)
