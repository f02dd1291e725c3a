# Builds and runs the consumer project (this folder) one way, as a user would:
#   cmake -DMODE=find_package -DBUILD_DIR=<kjit build> -DSOURCE_DIR=<kjit source>
#         -DWORK_DIR=<scratch> [-DGENERATOR=...] [-DCXX=...] -P check.cmake
#   cmake -DMODE=add_subdirectory -DSOURCE_DIR=<kjit source> -DWORK_DIR=<scratch> ... -P check.cmake
# find_package installs BUILD_DIR into a fresh prefix first. add_subdirectory refuses Python,
# nanobind and GoogleTest to the configure step: kjit as a subproject must need none of them. It
# also builds kjit without its CUDA backend, which must leave the CPU backend working.
cmake_minimum_required(VERSION 3.22)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE failed)
  if(failed)
    string(REPLACE ";" " " line "${ARGN}")
    message(FATAL_ERROR "failed (${failed}): ${line}")
  endif()
endfunction()

set(consumer_build ${WORK_DIR}/${MODE})
set(configure ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${consumer_build})
if(GENERATOR)
  list(APPEND configure -G ${GENERATOR})
endif()
if(CXX)
  list(APPEND configure -DCMAKE_CXX_COMPILER=${CXX})
endif()

if(MODE STREQUAL "find_package")
  set(prefix ${WORK_DIR}/prefix)
  file(REMOVE_RECURSE ${prefix})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  # The installed package stands on its own: nothing in it points back into the source tree.
  file(GLOB_RECURSE package_files ${prefix}/*.cmake)
  foreach(f IN LISTS package_files)
    file(READ ${f} text)
    string(FIND "${text}" "${SOURCE_DIR}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} names the source tree ${SOURCE_DIR}")
    endif()
  endforeach()
  list(APPEND configure -DCMAKE_PREFIX_PATH=${prefix} -DKJIT_SOURCE_DIR=)
elseif(MODE STREQUAL "add_subdirectory")
  list(APPEND configure -DKJIT_SOURCE_DIR=${SOURCE_DIR} -DKJIT_WITH_CUDA=OFF
       -DCMAKE_DISABLE_FIND_PACKAGE_Python=ON
       -DCMAKE_DISABLE_FIND_PACKAGE_nanobind=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON)
else()
  message(FATAL_ERROR "MODE is find_package or add_subdirectory, not '${MODE}'")
endif()

cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
run(${configure})
run(${CMAKE_COMMAND} --build ${consumer_build} --parallel ${cores})
run(${CMAKE_COMMAND} -E env KJIT_CACHE_DIR=${WORK_DIR}/cache ${consumer_build}/consumer)
