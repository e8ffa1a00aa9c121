#include "analysis/trace_formats.h"

#include <array>

#include "analysis/kineto_json_reader.h"
#include "analysis/nsys_sqlite_reader.h"
#include "analysis/xspace_reader.h"

namespace fleetprof::analysis {
namespace {

bool LooksLikeJson(std::string_view bytes) {
  if (bytes.starts_with("\xEF\xBB\xBF")) bytes.remove_prefix(3);  // BOM
  for (char c : bytes) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// Field 1 (planes), length-delimited: how every XSpace with a plane starts. The byte is
// also '\n', so JSON is tried first.
bool LooksLikeXSpace(std::string_view bytes) { return !bytes.empty() && bytes[0] == '\x0a'; }

constexpr std::array<std::string_view, 1> kJsonSuffixes = {".json"};
constexpr std::array<std::string_view, 1> kXSpaceSuffixes = {".pb"};  // *.xplane.pb
constexpr std::array<std::string_view, 1> kNsysSuffixes = {".sqlite"};  // nsys export --type sqlite

// A SQLite file starts with "SQLite format 3\0", which no JSON or XSpace does.
constexpr std::array<TraceFormatSpec, 3> kFormats = {{
    {TraceFormat::kKinetoJson, "kineto_json", "a Kineto", kJsonSuffixes, LooksLikeJson, ReadKinetoJson, true},
    {TraceFormat::kXSpace, "xspace", "an XSpace", kXSpaceSuffixes, LooksLikeXSpace, ReadXSpace, false},
    {TraceFormat::kNsysSqlite, "nsys_sqlite", "an Nsight Systems SQLite", kNsysSuffixes, LooksLikeSqlite,
     ReadNsysSqlite, true},
}};

}  // namespace

std::span<const TraceFormatSpec> TraceFormats() { return kFormats; }

const TraceFormatSpec* FindTraceFormat(TraceFormat format) {
  for (const TraceFormatSpec& spec : kFormats) {
    if (spec.format == format) return &spec;
  }
  return nullptr;
}

}  // namespace fleetprof::analysis
