# ctest runs tests/consumer as a separate project twice: against this build's `cmake --install`
# output through find_package, and with this source tree as its subdirectory.
set(KJIT_CONSUMER_ARGS
  -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/consumer
  -DGENERATOR=${CMAKE_GENERATOR} -DCXX=${CMAKE_CXX_COMPILER})
if(KJIT_INSTALL)
  add_test(NAME consumer_find_package
    COMMAND ${CMAKE_COMMAND} ${KJIT_CONSUMER_ARGS} -DMODE=find_package
            -DBUILD_DIR=${CMAKE_CURRENT_BINARY_DIR} -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
endif()
add_test(NAME consumer_add_subdirectory
  COMMAND ${CMAKE_COMMAND} ${KJIT_CONSUMER_ARGS} -DMODE=add_subdirectory
          -P ${CMAKE_CURRENT_LIST_DIR}/check.cmake)
# The subdirectory build compiles the library again, with every core.
set_tests_properties(consumer_add_subdirectory PROPERTIES TIMEOUT 1200)
