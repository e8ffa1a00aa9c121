// The gzip source (ISA-L inflate on its worker thread, concatenated members), read to its end
// or to 64 MiB of output, whichever comes first.
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/byte_source.h"
#include "fuzz/fuzz_limits.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetprof;
  std::unique_ptr<analysis::ByteSource> source = analysis::MaybeGunzip(analysis::OpenStringSource(
      "fuzz.gz", std::string(reinterpret_cast<const char*>(data), size), fuzz::ChunkFor(data, size)));
  std::vector<char> buffer(1 + (size > 1 ? data[1] * 64 : 4096));
  size_t total = 0;
  while (total < (64u << 20)) {
    absl::StatusOr<size_t> got = source->Read(buffer.data(), buffer.size());
    if (!got.ok() || *got == 0) break;
    total += *got;
  }
  return 0;
}
