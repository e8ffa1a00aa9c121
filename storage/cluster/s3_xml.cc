#include "storage/cluster/s3_xml.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace fleetprof::cluster {
namespace {

std::string Unescape(std::string_view s) {
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    bool replaced = false;
    if (s[i] == '&') {
      for (const auto& [entity, c] : kEntities) {
        if (s.substr(i).starts_with(entity)) {
          out.push_back(c);
          i += entity.size();
          replaced = true;
          break;
        }
      }
    }
    if (!replaced) out.push_back(s[i++]);
  }
  return out;
}

// The raw text between <tag> and </tag> at or after `from`; npos in `*end` when there is none.
std::string_view Element(std::string_view xml, std::string_view tag, size_t from, size_t* end) {
  const std::string open = absl::StrCat("<", std::string(tag), ">");
  const std::string close = absl::StrCat("</", std::string(tag), ">");
  size_t start = xml.find(open, from);
  if (start == std::string_view::npos) {
    *end = std::string_view::npos;
    return {};
  }
  start += open.size();
  size_t stop = xml.find(close, start);
  if (stop == std::string_view::npos) {
    *end = std::string_view::npos;
    return {};
  }
  *end = stop + close.size();
  return xml.substr(start, stop - start);
}

}  // namespace

std::string XmlText(std::string_view xml, std::string_view tag) {
  size_t end = 0;
  return Unescape(Element(xml, tag, 0, &end));
}

std::string XmlEscape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

absl::StatusOr<ListPage> ParseListPage(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) return absl::DataLossError("not a ListBucketResult");
  ListPage page;
  size_t pos = 0;
  while (true) {
    size_t end = 0;
    std::string_view contents = Element(xml, "Contents", pos, &end);
    if (end == std::string_view::npos) break;
    pos = end;
    ListPage::Entry entry;
    entry.key = XmlText(contents, "Key");
    if (entry.key.empty() || !absl::SimpleAtoi(XmlText(contents, "Size"), &entry.size)) {
      return absl::DataLossError("a listed object without a key or size");
    }
    page.entries.push_back(std::move(entry));
  }
  page.truncated = XmlText(xml, "IsTruncated") == "true";
  page.next_token = XmlText(xml, "NextContinuationToken");
  return page;
}

}  // namespace fleetprof::cluster
