# The C++ package: the static library, its public headers, and a CMake config so that a project
# finds it with find_package(kjit CONFIG) and links kjit::kjit.
include(CMakePackageConfigHelpers)

set(KJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kjit)
install(TARGETS kjit EXPORT kjitTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/kjit DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kjitTargets NAMESPACE kjit:: DESTINATION ${KJIT_CMAKE_DIR})

configure_package_config_file(cmake/kjitConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kjitConfig.cmake INSTALL_DESTINATION ${KJIT_CMAKE_DIR})
# Before 1.0 a new minor version may change the API.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kjitConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kjitConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/kjitConfigVersion.cmake DESTINATION ${KJIT_CMAKE_DIR})
