#include "analysis/nsys_table_reader.h"

#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace fleetprof::analysis {
namespace {

constexpr std::string_view kExportMetadataTables[] = {"META_DATA_EXPORT", "EXPORT_META_DATA"};
constexpr std::string_view kMetadataKeys[][2] = {
    {"EXPORT_PRODUCT_VERSION", "nsys_version"},
    {"EXPORT_SCHEMA_VERSION", "schema_version"},
};
// No export describes more GPUs or copy kinds; rows past these are ignored.
constexpr int64_t kMaxGpuRows = 4096;
constexpr int64_t kMaxMemcpyKinds = 4096;
constexpr NsysColumn kMetadataColumns[] = {{"name", true}, {"value", true}};
constexpr NsysColumn kGpuColumns[] = {{"id", true}, {"name", false}, {"totalMemory", false}};
constexpr NsysColumn kMemcpyKindColumns[] = {{"id", true}, {"label", true}};

std::string Where(std::string_view table, int64_t index) { return absl::StrCat("row ", index, " of ", std::string(table)); }

}  // namespace

int64_t CorrelationKeys::Key(int64_t process, int64_t correlation) {
  if (process >= 0 && process < (int64_t{1} << 30) && correlation >= 0 &&
      correlation <= std::numeric_limits<uint32_t>::max()) {
    return (process << 32) | correlation;
  }
  auto [it, inserted] = others_.try_emplace(std::make_pair(process, correlation), -1 - static_cast<int64_t>(others_.size()));
  return it->second;
}

absl::Status NsysTableReader::Read() {
  absl::StatusOr<bool> strings = db_.HasTable(kNsysStringTable);
  if (!strings.ok()) return strings.status();
  if (!*strings) {
    return absl::InvalidArgumentError(
        absl::StrCat(db_.name(), ": not an Nsight Systems export: the SQLite database has no StringIds table"));
  }
  // Refuse a view or trigger posing as any table read here before reading anything.
  for (std::string_view table : {kNsysKernelTable, kNsysMemcpyTable, kNsysMemsetTable, kNsysRuntimeTable,
                                 kNsysNvtxTable, kNsysMemcpyKindTable, kNsysGpuTable, kExportMetadataTables[0],
                                 kExportMetadataTables[1]}) {
    if (absl::StatusOr<bool> has = db_.HasTable(table); !has.ok()) return has.status();
  }
  absl::StatusOr<SqliteStatement> lookup =
      db_.Prepare("SELECT value FROM main.StringIds WHERE id = ?1", "reading StringIds");
  if (!lookup.ok()) return lookup.status();
  string_lookup_.emplace(*std::move(lookup));
  for (absl::Status (NsysTableReader::*step)() :
       {&NsysTableReader::ReadMetadata, &NsysTableReader::ReadGpus, &NsysTableReader::ReadMemcpyKinds,
        &NsysTableReader::ReadKernels, &NsysTableReader::ReadMemcpys, &NsysTableReader::ReadMemsets,
        &NsysTableReader::ReadNvtxDomains, &NsysTableReader::ReadNvtxRanges, &NsysTableReader::ReadCudaCalls}) {
    if (absl::Status status = (this->*step)(); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<SqliteStatement>> NsysTableReader::Select(std::string_view table,
                                                                       std::span<const NsysColumn> columns,
                                                                       std::string_view where) {
  absl::StatusOr<bool> has = db_.HasTable(table);
  if (!has.ok()) return has.status();
  if (!*has) return std::nullopt;
  absl::StatusOr<std::vector<std::string>> present = db_.Columns(table);
  if (!present.ok()) return present.status();
  std::string sql = "SELECT ";
  for (const NsysColumn& column : columns) {
    bool found = false;
    for (const std::string& name : *present) found = found || absl::EqualsIgnoreCase(name, std::string(column.name));
    if (!found && column.required) {
      return absl::InvalidArgumentError(absl::StrCat(db_.name(), ": not an Nsight Systems export of a known schema: ",
                                                     std::string(table), " has no column ", std::string(column.name)));
    }
    if (&column != &columns.front()) sql += ", ";
    sql += found ? absl::StrCat("\"", std::string(column.name), "\"") : std::string("NULL");
  }
  // NOT INDEXED: a scan of the table itself, in rowid order, whatever indexes the file has.
  absl::StrAppend(&sql, " FROM main.\"", std::string(table), "\" NOT INDEXED");
  if (!where.empty()) absl::StrAppend(&sql, " WHERE ", std::string(where));
  absl::StatusOr<SqliteStatement> statement = db_.Prepare(sql, absl::StrCat("reading ", std::string(table)));
  if (!statement.ok()) return statement.status();
  return std::optional<SqliteStatement>(*std::move(statement));
}

absl::Status NsysTableReader::ForEachRow(std::string_view table, std::span<const NsysColumn> columns, bool events,
                                         RowFn fn, std::string_view where) {
  absl::StatusOr<std::optional<SqliteStatement>> statement = Select(table, columns, where);
  if (!statement.ok()) return statement.status();
  if (!statement->has_value()) return absl::OkStatus();  // an absent table has no rows
  SqliteStatement& rows = **statement;
  for (int64_t index = 1;; ++index) {
    absl::StatusOr<bool> row = rows.Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    if (events) ++out_->events;
    if (absl::Status status = fn(rows, index); !status.ok()) return status;
    if (!out_->WithinLimits()) return out_->LimitErrorAt(db_.name(), Where(table, index));
  }
}

absl::StatusOr<bool> NsysTableReader::RowSpan(const SqliteStatement& row, std::string_view table, int64_t index,
                                              Ticks* start, Ticks* dur) {
  const std::optional<int64_t> begin = row.Int(0);
  const std::optional<int64_t> end = row.Int(1);
  if (!begin || !end) {
    ++out_->skipped_events;
    return false;
  }
  if (!WithinTickBound(*begin) || !WithinTickBound(*end)) {
    return out_->TimeRangeErrorAt(db_.name(), Where(table, index),
                                  absl::StrCat("start ", *begin, " ns, end ", *end, " ns"));
  }
  if (*end < *begin) {
    ++out_->skipped_events;  // as a negative "dur" in JSON
    return false;
  }
  *start = *begin;
  *dur = *end - *begin;
  return true;
}

absl::StatusOr<std::optional<std::string_view>> NsysTableReader::String(int64_t id) {
  if (absl::Status bound = string_lookup_->BindInt(1, id); !bound.ok()) return bound;
  absl::StatusOr<bool> row = string_lookup_->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::nullopt;
  std::optional<std::string_view> text = string_lookup_->Text(0);
  if (!text) return std::nullopt;
  return text->substr(0, Utf8CutPoint(*text, static_cast<size_t>(out_->limits.max_name_bytes)));
}

NameId NsysTableReader::Intern(std::string_view name) {
  return out_->names.Intern(name.substr(0, Utf8CutPoint(name, static_cast<size_t>(out_->limits.max_name_bytes))));
}

NameId NsysTableReader::InternInt(absl::flat_hash_map<int64_t, NameId>* cache, int64_t value) {
  auto it = cache->find(value);
  if (it != cache->end()) return it->second;
  const NameId id = out_->names.Intern(std::to_string(value));
  cache->emplace(value, id);
  return id;
}

NameId NsysTableReader::Thread(std::optional<int64_t> global_tid) {
  if (!global_tid) return out_->names.Intern("\x1f");
  auto it = threads_.find(*global_tid);
  if (it != threads_.end()) return it->second;
  // The process is globalTid >> 24, the thread the low 24 bits: keys compared as strings.
  const NameId id = out_->names.Intern(absl::StrCat(*global_tid >> 24, "\x1f", *global_tid & 0xFFFFFF));
  threads_.emplace(*global_tid, id);
  return id;
}

absl::Status NsysTableReader::ReadMetadata() {
  for (std::string_view table : kExportMetadataTables) {
    absl::Status status = ForEachRow(
        table, kMetadataColumns, false,
        [&](const SqliteStatement& row, int64_t) {
          const std::optional<std::string_view> name = row.Text(0);
          const std::optional<std::string_view> value = row.Text(1);
          if (!name || !value) return absl::OkStatus();
          for (const auto& [export_key, key] : kMetadataKeys) {
            if (*name == export_key) out_->metadata.emplace(key, value->substr(0, Utf8CutPoint(*value, 256)));
          }
          return absl::OkStatus();
        },
        "name IN ('EXPORT_PRODUCT_VERSION', 'EXPORT_SCHEMA_VERSION')");
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status NsysTableReader::ReadGpus() {
  return ForEachRow(kNsysGpuTable, kGpuColumns, false,
                    [&](const SqliteStatement& row, int64_t index) {
                      const std::optional<int64_t> id = row.Int(0);
                      if (!id || index > kMaxGpuRows) return absl::OkStatus();
                      const std::string prefix = absl::StrCat("device.", *id, ".");
                      if (std::optional<std::string_view> name = row.Text(1)) {
                        out_->metadata.emplace(prefix + "name", name->substr(0, Utf8CutPoint(*name, 256)));
                      }
                      if (std::optional<int64_t> memory = row.Int(2)) {
                        out_->metadata.emplace(prefix + "total_global_mem", std::to_string(*memory));
                      }
                      return absl::OkStatus();
                    });
}

absl::Status NsysTableReader::ReadMemcpyKinds() {
  absl::StatusOr<bool> has = db_.HasTable(kNsysMemcpyKindTable);
  if (!has.ok()) return has.status();
  has_memcpy_kinds_ = *has;
  return ForEachRow(kNsysMemcpyKindTable, kMemcpyKindColumns, false,
                    [&](const SqliteStatement& row, int64_t index) {
                      const std::optional<int64_t> id = row.Int(0);
                      const std::optional<std::string_view> label = row.Text(1);
                      if (id && label && index <= kMaxMemcpyKinds) {
                        memcpy_kinds_.emplace(*id, label->substr(0, Utf8CutPoint(*label, 256)));
                      }
                      return absl::OkStatus();
                    });
}

}  // namespace fleetprof::analysis
