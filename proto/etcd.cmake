# etcd v3's KV, Lease and Watch services (proto/etcd/etcd_rpc.proto), compiled into
# fleetprof_etcd_proto for the cluster catalog. Included from proto/CMakeLists.txt.
fleetprof_grpc_proto_library(fleetprof_etcd_proto ${CMAKE_CURRENT_LIST_DIR} etcd/etcd_rpc.proto
                             ${CMAKE_CURRENT_BINARY_DIR}/etcd_gen)
