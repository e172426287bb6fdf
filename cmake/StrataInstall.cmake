# Installs the library, its headers and a CMake package, so that a consumer can
#   find_package(Strata) + target_link_libraries(app PRIVATE Strata::strata).
include(CMakePackageConfigHelpers)

install(TARGETS strata EXPORT StrataTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Headers keep the source layout under include/strata/ (strata.h at its top).
install(DIRECTORY include/strata/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata)
foreach(dir tensor kernels dispatcher transforms ops func distributed)
  install(DIRECTORY ${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/strata/${dir}
          FILES_MATCHING PATTERN "*.h")
endforeach()

install(EXPORT StrataTargets NAMESPACE Strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
configure_package_config_file(cmake/StrataConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/StrataConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/StrataConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/StrataConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/StrataConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Strata)
