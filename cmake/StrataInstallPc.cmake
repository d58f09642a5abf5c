# Install-time script (cmake/StrataPackage.cmake): writes strata.pc for the prefix being
# installed to and installs it as <prefix>/lib/pkgconfig/strata.pc. file(INSTALL) honours
# DESTDIR and records the file in install_manifest.txt.
set(STRATA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
configure_file("${STRATA_PC_TEMPLATE}" "${STRATA_PC_STAGING}" @ONLY)
file(INSTALL "${STRATA_PC_STAGING}" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/pkgconfig"
     RENAME strata.pc)
