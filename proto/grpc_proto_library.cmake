# fleetprof_grpc_proto_library(TARGET PROTO_ROOT PROTO GEN_DIR): one .proto file (PROTO, relative
# to PROTO_ROOT) compiled with its gRPC stubs into the static library TARGET, its headers under
# GEN_DIR. For the foreign services fleetprof speaks to (the TSL profiler, etcd).
function(fleetprof_grpc_proto_library target proto_root proto gen_dir)
  file(MAKE_DIRECTORY ${gen_dir})
  get_target_property(grpc_plugin gRPC::grpc_cpp_plugin LOCATION)
  string(REGEX REPLACE "\\.proto$" "" out ${gen_dir}/${proto})
  add_custom_command(
    OUTPUT ${out}.pb.cc ${out}.pb.h ${out}.grpc.pb.cc ${out}.grpc.pb.h
    COMMAND protobuf::protoc
      --proto_path=${proto_root}
      --cpp_out=${gen_dir} --grpc_out=${gen_dir}
      --plugin=protoc-gen-grpc=${grpc_plugin}
      ${proto_root}/${proto}
    DEPENDS ${proto_root}/${proto} protobuf::protoc
    COMMENT "protoc ${proto}")
  add_library(${target} STATIC ${out}.pb.cc ${out}.grpc.pb.cc)
  target_include_directories(${target} PUBLIC ${gen_dir})
  target_compile_options(${target} PRIVATE -Wno-unused-parameter)
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf gRPC::grpc++)
endfunction()
