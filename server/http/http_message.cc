#include "server/http/http_message.h"

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace fleetprof {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (absl::EqualsIgnoreCase(absl::string_view(key.data(), key.size()), absl::string_view(name.data(), name.size()))) {
      return value;
    }
  }
  return {};
}

std::string DecodeUrlPath(std::string_view path) {
  std::string out;
  out.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size()) {
      const int high = HexValue(path[i + 1]), low = HexValue(path[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(path[i]);
  }
  return out;
}

}  // namespace fleetprof
