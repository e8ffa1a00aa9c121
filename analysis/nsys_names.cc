#include "analysis/nsys_names.h"

#include <algorithm>
#include <array>


namespace fleetprof::analysis {

std::string_view StripCudaVersionSuffix(std::string_view name) {
  size_t digits = name.size();
  while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
  if (digits == name.size() || digits < 2 || name.substr(digits - 2, 2) != "_v") return name;
  return name.substr(0, digits - 2);
}

std::string_view FixedMemcpyKindLabel(int64_t copy_kind) {
  static constexpr std::array<std::string_view, 14> kLabels = {
      "Unknown",         "Host-to-Device",  "Device-to-Host",  "Host-to-Array",
      "Array-to-Host",   "Array-to-Array",  "Array-to-Device", "Device-to-Array",
      "Device-to-Device", "Host-to-Host",   "Peer-to-Peer",    "Unified Host-to-Device",
      "Unified Device-to-Host", "Unified Device-to-Device",
  };
  if (copy_kind < 0 || copy_kind >= static_cast<int64_t>(kLabels.size())) return kLabels[0];
  return kLabels[static_cast<size_t>(copy_kind)];
}

std::string MemcpyName(std::string_view label) { std::string name = "[CUDA memcpy ";
  name.append(label);
  name.push_back(']');
  return name; }

size_t EmitNvtxOpNameLength(std::string_view name) {
  static constexpr std::array<std::string_view, 4> kMarkers = {", seq = ", ", op_id = ", ", sizes = ",
                                                               ", input_op_ids = "};
  size_t cut = name.size();
  for (std::string_view marker : kMarkers) cut = std::min(cut, name.find(marker));
  return cut;
}

}  // namespace fleetprof::analysis
