#pragma once
// The little XML that S3's replies carry (listings, multipart ids, errors): found by tag, not
// parsed into a tree — every element fleetprof reads is a leaf with text.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace fleetprof::cluster {

// The unescaped text of the first <tag>…</tag> in `xml`, or "" when there is none.
std::string XmlText(std::string_view xml, std::string_view tag);
std::string XmlEscape(std::string_view text);

struct ListPage {
  struct Entry {
    std::string key;
    int64_t size = 0;
  };
  std::vector<Entry> entries;
  bool truncated = false;
  std::string next_token;
};
// A ListObjectsV2 reply.
absl::StatusOr<ListPage> ParseListPage(std::string_view xml);

}  // namespace fleetprof::cluster
