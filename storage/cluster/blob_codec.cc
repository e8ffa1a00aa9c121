#include "storage/cluster/blob_codec.h"

#include <zstd.h>

#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fleetprof::cluster {
namespace {

struct CCtxFree {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

std::string Compress(std::string_view bytes) {
  // One context per thread: creating one costs more than compressing a small block.
  thread_local std::unique_ptr<ZSTD_CCtx, CCtxFree> cctx([] {
    ZSTD_CCtx* c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1);
    return c;
  }());
  std::string out(ZSTD_compressBound(bytes.size()), '\0');
  size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), bytes.data(), bytes.size());
  // Compressing into a buffer of ZSTD_compressBound cannot fail short of a bug.
  if (ZSTD_isError(n)) std::abort();
  out.resize(n);
  return out;
}

absl::StatusOr<int64_t> FrameContentSize(std::string_view frame_start) {
  unsigned long long size = ZSTD_getFrameContentSize(frame_start.data(), frame_start.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > (1ull << 62)) {
    return absl::DataLossError("not a zstd frame with its content size");
  }
  return static_cast<int64_t>(size);
}

absl::StatusOr<std::string> Decompress(std::string_view frame, int64_t max_bytes, std::string_view what) {
  auto size = FrameContentSize(frame);
  if (!size.ok()) return absl::DataLossError(absl::StrCat(std::string(what), ": ", size.status().message()));
  if (*size > max_bytes) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": announces ", *size, " bytes, over the limit of ", max_bytes));
  }
  std::string out(static_cast<size_t>(*size), '\0');
  size_t n = ZSTD_decompress(out.data(), out.size(), frame.data(), frame.size());
  if (ZSTD_isError(n) || n != out.size()) {
    return absl::DataLossError(absl::StrCat(std::string(what), ": damaged (", ZSTD_isError(n) ? ZSTD_getErrorName(n) : "short", ")"));
  }
  return out;
}

std::string EncodeKeyWord(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size());
  for (unsigned char c : name) {
    if (absl::ascii_isalnum(c) || c == '-') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('_');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out.empty()) out = "_";  // the empty name: "_" alone decodes to ""
  return out;
}

bool DecodeKeyWord(std::string_view word, std::string* name) {
  name->clear();
  if (word == "_") return true;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < word.size(); ++i) {
    if (word[i] != '_') {
      name->push_back(word[i]);
      continue;
    }
    if (i + 2 >= word.size()) return false;
    int hi = hex(word[i + 1]), lo = hex(word[i + 2]);
    if (hi < 0 || lo < 0) return false;
    name->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

}  // namespace fleetprof::cluster
