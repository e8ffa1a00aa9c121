# Client of the XLA/TSL profiler service (JAX / TF / PyTorch-XLA jobs). Included from
# collectors/CMakeLists.txt; needs fleetprof_xprof_proto (proto/tensorflow.cmake).
add_library(fleetprof_xprof STATIC ${CMAKE_CURRENT_LIST_DIR}/xprof_client.cc)
target_include_directories(fleetprof_xprof PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(fleetprof_xprof
  PUBLIC absl::status absl::statusor fleetprof_common
  PRIVATE fleetprof_xprof_proto gRPC::grpc++ absl::strings spdlog::spdlog)
