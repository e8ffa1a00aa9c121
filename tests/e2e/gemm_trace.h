#pragma once
// A Kineto JSON trace with known kernel times, for the tests that upload a job's profiles and
// expect (or not) a regression of its gemm kernel.

#include <fstream>
#include <string>

namespace fleetprof::testing {

// Writes to `path` a 1 s trace without steps: one host op over the whole second, and ten
// launches of two kernels, gemm_kernel (`gemm_us` each) and copy_kernel (2 ms each); returns
// `path`.
inline std::string WriteTrace(const std::string& path, int gemm_us) {
  std::ofstream out(path);
  out << R"({"traceEvents":[)"
      << R"({"ph":"X","cat":"cpu_op","name":"aten::train_loop","pid":1,"tid":1,"ts":0,"dur":1000000})";
  for (int i = 0; i < 10; ++i) {
    const int ts = 1000 + i * 90000;
    out << R"(,{"ph":"X","cat":"kernel","name":"gemm_kernel","pid":0,"tid":7,"ts":)" << ts << R"(,"dur":)" << gemm_us
        << "}";
    out << R"(,{"ph":"X","cat":"kernel","name":"copy_kernel","pid":0,"tid":7,"ts":)" << ts + 60000
        << R"(,"dur":2000})";
  }
  out << "]}";
  return path;
}

}  // namespace fleetprof::testing
