#include "common/text_checks.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace fleetprof {

bool IsPrintableUtf8(std::string_view text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  size_t i = 0;
  while (i < text.size()) {
    const size_t length = Utf8SequenceLength(text, i);
    if (length == 0) return false;
    const auto lead = static_cast<uint8_t>(text[i]);
    if (length == 1 && (lead < 0x20 || lead == 0x7f)) return false;
    if (length == 2 && lead == 0xc2 && static_cast<uint8_t>(text[i + 1]) < 0xa0) return false;  // C1 controls
    i += length;
  }
  return true;
}

bool IsHostPort(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || address.size() > 261) return false;
  std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
  }
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == ':';
    if (!ok) return false;
  }
  if (port.empty() || port.size() > 5) return false;
  uint32_t value = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint32_t>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

absl::Status CheckPrintableText(std::string_view what, std::string_view text, size_t max_bytes) {
  if (IsPrintableUtf8(text, max_bytes)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(absl::string_view(what.data(), what.size()), " must be 1-", max_bytes,
                                                  " bytes of printable UTF-8 (no control characters), got ",
                                                  text.size(), " bytes"));
}

}  // namespace fleetprof
