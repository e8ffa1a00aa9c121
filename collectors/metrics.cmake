# Device (NVML) and host (procfs) metrics for Prometheus. Included from collectors/CMakeLists.txt.
# NVML is dlopen'ed at run time, so nothing here needs CUDA or libnvidia-ml at build time.
add_library(fleetprof_device_metrics STATIC
  ${CMAKE_CURRENT_LIST_DIR}/device_metrics_exporter.cc
  ${CMAKE_CURRENT_LIST_DIR}/host_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/job_owners.cc
  ${CMAKE_CURRENT_LIST_DIR}/metrics_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/nvml_collector.cc
  ${CMAKE_CURRENT_LIST_DIR}/process_jobs.cc)
target_include_directories(fleetprof_device_metrics PUBLIC ${CMAKE_CURRENT_LIST_DIR}/..)
target_link_libraries(fleetprof_device_metrics
  PUBLIC prometheus-cpp::core spdlog::spdlog absl::strings absl::status absl::statusor absl::synchronization
  PRIVATE fleetprof_common ${CMAKE_DL_LIBS} Threads::Threads)
