# Installation layout and the Debian package (cpack -G DEB).
include(GNUInstallDirs)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/datasets/configs/" DESTINATION "${CMAKE_INSTALL_DATADIR}/xmc-workbench/configs"
        FILES_MATCHING PATTERN "*.json")
install(FILES "${PROJECT_SOURCE_DIR}/packaging/xmc-workbench.desktop" DESTINATION "${CMAKE_INSTALL_DATADIR}/applications")
install(FILES "${PROJECT_SOURCE_DIR}/packaging/io.github.xmc_workbench.metainfo.xml" DESTINATION "${CMAKE_INSTALL_DATADIR}/metainfo")
install(FILES "${PROJECT_SOURCE_DIR}/resources/icons/xmc-workbench.svg"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps")

set(CPACK_PACKAGE_NAME "xmc-workbench")
set(CPACK_PACKAGE_VENDOR "XMC Workbench developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Extreme multi-label classification workbench (Qt GUI and xmc CLI)")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "XMC Workbench developers <xmc-workbench@users.noreply.example>")
set(CPACK_GENERATOR "DEB")
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # runtime dependencies from the linked shared libraries
# The speeds the README states were measured with OpenBLAS behind libblas.so.3. The shared-library scan only
# finds "libblas3 | libblas.so.3", which the reference BLAS satisfies, and with it training runs ~50x slower.
# Debian's alternatives pick OpenBLAS once it is installed.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "wordnet-base, libopenblas0-pthread | libopenblas0-openmp | libopenblas0")
include(CPack)
