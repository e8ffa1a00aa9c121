# The XLA/TSL profiler service (tensorflow.ProfilerService) that JAX/TF/PyTorch-XLA jobs serve,
# compiled into fleetprof_xprof_proto. Included from proto/CMakeLists.txt; every variable here
# is prefixed XPROF_PROTO_ because include() shares the includer's scope.
set(XPROF_PROTO_ROOT ${CMAKE_CURRENT_LIST_DIR})
set(XPROF_PROTO_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/xprof_gen)
file(MAKE_DIRECTORY ${XPROF_PROTO_GEN_DIR})
get_target_property(XPROF_PROTO_GRPC_PLUGIN gRPC::grpc_cpp_plugin LOCATION)

set(XPROF_PROTO_SRC ${XPROF_PROTO_ROOT}/tensorflow/profiler_service.proto)
set(XPROF_PROTO_OUT ${XPROF_PROTO_GEN_DIR}/tensorflow/profiler_service)
add_custom_command(
  OUTPUT ${XPROF_PROTO_OUT}.pb.cc ${XPROF_PROTO_OUT}.pb.h
         ${XPROF_PROTO_OUT}.grpc.pb.cc ${XPROF_PROTO_OUT}.grpc.pb.h
  COMMAND protobuf::protoc
    --proto_path=${XPROF_PROTO_ROOT}
    --cpp_out=${XPROF_PROTO_GEN_DIR} --grpc_out=${XPROF_PROTO_GEN_DIR}
    --plugin=protoc-gen-grpc=${XPROF_PROTO_GRPC_PLUGIN}
    ${XPROF_PROTO_SRC}
  DEPENDS ${XPROF_PROTO_SRC} protobuf::protoc
  COMMENT "protoc tensorflow/profiler_service.proto")

add_library(fleetprof_xprof_proto STATIC ${XPROF_PROTO_OUT}.pb.cc ${XPROF_PROTO_OUT}.grpc.pb.cc)
target_include_directories(fleetprof_xprof_proto PUBLIC ${XPROF_PROTO_GEN_DIR})
target_compile_options(fleetprof_xprof_proto PRIVATE -Wno-unused-parameter)
target_link_libraries(fleetprof_xprof_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)
