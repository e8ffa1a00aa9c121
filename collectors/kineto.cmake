# PyTorch on-demand tracing: the Kineto IPC endpoint ("\0dynolog\0" or
# $KINETO_IPC_SOCKET_DIR/dynolog), the dynolog-compatible TCP API that `dyno gputrace` talks
# to (also on a unix socket; callers named by the kernel in peer_identity), and the wait for
# the trace file a job writes. Included from collectors/CMakeLists.txt.
find_package(simdjson REQUIRED)

add_library(fleetprof_kineto STATIC
  ${CMAKE_CURRENT_LIST_DIR}/dynolog_api.cc
  ${CMAKE_CURRENT_LIST_DIR}/dynolog_listeners.cc
  ${CMAKE_CURRENT_LIST_DIR}/kineto_config.cc
  ${CMAKE_CURRENT_LIST_DIR}/kineto_endpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/kineto_ipc.cc
  ${CMAKE_CURRENT_LIST_DIR}/kineto_start.cc
  ${CMAKE_CURRENT_LIST_DIR}/peer_identity.cc
  ${CMAKE_CURRENT_LIST_DIR}/trace_file_waiter.cc)
target_include_directories(fleetprof_kineto PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
# fleetprof_device_metrics (metrics.cmake) owns process_jobs.h, the one reader of
# FLEETPROF_JOB from /proc/<pid>/environ.
target_link_libraries(fleetprof_kineto
  PUBLIC absl::status absl::statusor absl::strings spdlog::spdlog Threads::Threads
  PRIVATE fleetprof_auth fleetprof_common fleetprof_device_metrics simdjson::simdjson)
