#include "common/text_checks.h"

#include <cstdint>

namespace fleetprof {

bool IsPrintableUtf8(std::string_view text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
    const uint8_t lead = byte(i);
    if (lead < 0x80) {
      if (lead < 0x20 || lead == 0x7f) return false;
      ++i;
      continue;
    }
    size_t length = 0;
    uint32_t cp = 0;
    if ((lead & 0xe0) == 0xc0) {
      length = 2;
      cp = lead & 0x1f;
    } else if ((lead & 0xf0) == 0xe0) {
      length = 3;
      cp = lead & 0x0f;
    } else if ((lead & 0xf8) == 0xf0) {
      length = 4;
      cp = lead & 0x07;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((byte(i + k) & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (byte(i + k) & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    if (cp >= 0x80 && cp < 0xa0) return false;  // C1 controls
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

}  // namespace fleetprof
