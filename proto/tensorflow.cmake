# The XLA/TSL profiler service (tensorflow.ProfilerService) that JAX/TF/PyTorch-XLA jobs serve,
# compiled into fleetprof_xprof_proto. Included from proto/CMakeLists.txt.
fleetprof_grpc_proto_library(fleetprof_xprof_proto ${CMAKE_CURRENT_LIST_DIR} tensorflow/profiler_service.proto
                             ${CMAKE_CURRENT_BINARY_DIR}/xprof_gen)
