# etcd v3's KV, Lease and Watch services (proto/etcd/etcd_rpc.proto), compiled into
# fleetprof_etcd_proto for the cluster catalog. Included from proto/CMakeLists.txt; every
# variable here is prefixed ETCD_PROTO_ because include() shares the includer's scope.
set(ETCD_PROTO_ROOT ${CMAKE_CURRENT_LIST_DIR})
set(ETCD_PROTO_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/etcd_gen)
file(MAKE_DIRECTORY ${ETCD_PROTO_GEN_DIR})
get_target_property(ETCD_PROTO_GRPC_PLUGIN gRPC::grpc_cpp_plugin LOCATION)

set(ETCD_PROTO_SRC ${ETCD_PROTO_ROOT}/etcd/etcd_rpc.proto)
set(ETCD_PROTO_OUT ${ETCD_PROTO_GEN_DIR}/etcd/etcd_rpc)
add_custom_command(
  OUTPUT ${ETCD_PROTO_OUT}.pb.cc ${ETCD_PROTO_OUT}.pb.h
         ${ETCD_PROTO_OUT}.grpc.pb.cc ${ETCD_PROTO_OUT}.grpc.pb.h
  COMMAND protobuf::protoc
    --proto_path=${ETCD_PROTO_ROOT}
    --cpp_out=${ETCD_PROTO_GEN_DIR} --grpc_out=${ETCD_PROTO_GEN_DIR}
    --plugin=protoc-gen-grpc=${ETCD_PROTO_GRPC_PLUGIN}
    ${ETCD_PROTO_SRC}
  DEPENDS ${ETCD_PROTO_SRC} protobuf::protoc
  COMMENT "protoc etcd/etcd_rpc.proto")

add_library(fleetprof_etcd_proto STATIC ${ETCD_PROTO_OUT}.pb.cc ${ETCD_PROTO_OUT}.grpc.pb.cc)
target_include_directories(fleetprof_etcd_proto PUBLIC ${ETCD_PROTO_GEN_DIR})
target_compile_options(fleetprof_etcd_proto PRIVATE -Wno-unused-parameter)
target_link_libraries(fleetprof_etcd_proto PUBLIC protobuf::libprotobuf gRPC::grpc++)
