// Gzip input both ways the server meets it: the gzip source (ISA-L inflate on its worker thread,
// concatenated members) read to its end or to 64 MiB of output, whichever comes first; and the
// check of one upload chunk sent as a gzip member (at most 1 MiB inflated), whose content, when
// accepted, must survive GzipMember and the check again unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/byte_source.h"
#include "common/gzip_member.h"
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

  const std::string_view member(reinterpret_cast<const char*>(data), size);
  std::string plain;
  if (GunzipMember(member, 1 << 20, &plain).ok()) {
    std::string again;
    if (!GunzipMember(GzipMember(plain), 1 << 20, &again).ok() || again != plain) std::abort();
  }
  return 0;
}
