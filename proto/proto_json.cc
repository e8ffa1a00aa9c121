#include "proto/proto_json.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "proto/json_buffer.h"
#include "proto/json_plan.h"

namespace fleetprof {
namespace {

using google::protobuf::Message;
using google::protobuf::Reflection;
using json_plan::FieldPlan;
using json_plan::MessagePlan;
using json_plan::Shape;
using json_plan::ValueKind;

void WriteMessage(JsonBuffer& out, const MessagePlan& plan, const Message& message);

// Doubles and floats that are not finite are left out (JSON has no NaN); the rest always print.
// `index` < 0 reads the singular value, otherwise element `index` of the list.
bool Printable(const FieldPlan& f, const Reflection* r, const Message& m, int index) {
  if (f.kind == ValueKind::kDouble) {
    return std::isfinite(index < 0 ? r->GetDouble(m, f.field) : r->GetRepeatedDouble(m, f.field, index));
  }
  if (f.kind == ValueKind::kFloat) {
    return std::isfinite(index < 0 ? r->GetFloat(m, f.field) : r->GetRepeatedFloat(m, f.field, index));
  }
  return true;
}

// Writes `prefix` (a key, a comma or nothing) and one value of `f`: the singular value
// (index < 0) or element `index`. Numbers are written with the prefix in one reservation,
// since they are most of a trace window.
void WriteValue(JsonBuffer& out, std::string_view prefix, const FieldPlan& f, const Reflection* r, const Message& m,
                int index) {
  const bool rep = index >= 0;
  const auto number = [&](auto value) {
    char* p = JsonBuffer::Copy(out.Reserve(prefix.size() + JsonBuffer::kMaxNumber + 2), prefix);
    if (f.quoted) *p++ = '"';
    p = JsonBuffer::Integer(p, value);
    if (f.quoted) *p++ = '"';
    out.Commit(p);
  };
  switch (f.kind) {
    case ValueKind::kInt32:
      return number(rep ? r->GetRepeatedInt32(m, f.field, index) : r->GetInt32(m, f.field));
    case ValueKind::kInt64:
      return number(rep ? r->GetRepeatedInt64(m, f.field, index) : r->GetInt64(m, f.field));
    case ValueKind::kUInt32:
      return number(rep ? r->GetRepeatedUInt32(m, f.field, index) : r->GetUInt32(m, f.field));
    case ValueKind::kUInt64:
      return number(rep ? r->GetRepeatedUInt64(m, f.field, index) : r->GetUInt64(m, f.field));
    case ValueKind::kDouble:
    case ValueKind::kFloat: {
      const double v = f.kind == ValueKind::kDouble
                           ? (rep ? r->GetRepeatedDouble(m, f.field, index) : r->GetDouble(m, f.field))
                           : (rep ? r->GetRepeatedFloat(m, f.field, index) : r->GetFloat(m, f.field));
      char* p = JsonBuffer::Copy(out.Reserve(prefix.size() + JsonBuffer::kMaxNumber), prefix);
      return out.Commit(JsonBuffer::Double(p, v));
    }
    case ValueKind::kBool: {
      const bool v = rep ? r->GetRepeatedBool(m, f.field, index) : r->GetBool(m, f.field);
      char* p = JsonBuffer::Copy(out.Reserve(prefix.size() + 5), prefix);
      return out.Commit(JsonBuffer::Copy(p, v ? "true" : "false"));
    }
    case ValueKind::kEnum: {
      const int v = rep ? r->GetRepeatedEnumValue(m, f.field, index) : r->GetEnumValue(m, f.field);
      auto name = f.enum_names.find(v);
      if (name == f.enum_names.end()) return number(v);  // a value newer than this binary
      out.Append(prefix);
      return out.Append(name->second);
    }
    case ValueKind::kString: {
      std::string scratch;
      out.Append(prefix);
      return out.AppendString(rep ? r->GetRepeatedStringReference(m, f.field, index, &scratch)
                                  : r->GetStringReference(m, f.field, &scratch));
    }
    case ValueKind::kMessage:
      out.Append(prefix);
      return WriteMessage(out, *f.message,
                          rep ? r->GetRepeatedMessage(m, f.field, index) : r->GetMessage(m, f.field));
  }
}

void WriteList(JsonBuffer& out, const FieldPlan& f, const Reflection* r, const Message& m) {
  out.Put('[');
  std::string_view comma;  // empty before the first element
  const int n = r->FieldSize(m, f.field);
  for (int i = 0; i < n; ++i) {
    if (!Printable(f, r, m, i)) continue;
    WriteValue(out, comma, f, r, m, i);
    comma = ",";
  }
  out.Put(']');
}

// A map field is a list of entry messages {key=1, value=2}: printed as an object, keys sorted
// as text.
void WriteMap(JsonBuffer& out, const FieldPlan& f, const Reflection* r, const Message& m) {
  const FieldPlan& key_field = f.message->fields[0];
  const FieldPlan& value_field = f.message->fields[1];
  const int n = r->FieldSize(m, f.field);
  std::vector<std::pair<std::string, const Message*>> entries;
  entries.reserve(n);
  for (int i = 0; i < n; ++i) {
    const Message& entry = r->GetRepeatedMessage(m, f.field, i);
    const Reflection* er = f.message->ReflectionOf(entry);
    std::string key;
    switch (key_field.kind) {
      case ValueKind::kString:
        key = er->GetString(entry, key_field.field);
        break;
      case ValueKind::kBool:
        key = er->GetBool(entry, key_field.field) ? "true" : "false";
        break;
      case ValueKind::kInt32:
        key = absl::StrCat(er->GetInt32(entry, key_field.field));
        break;
      case ValueKind::kInt64:
        key = absl::StrCat(er->GetInt64(entry, key_field.field));
        break;
      case ValueKind::kUInt32:
        key = absl::StrCat(er->GetUInt32(entry, key_field.field));
        break;
      default:
        key = absl::StrCat(er->GetUInt64(entry, key_field.field));
    }
    entries.emplace_back(std::move(key), &entry);
  }
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  out.Put('{');
  bool first = true;
  for (const auto& [key, entry] : entries) {
    const Reflection* er = f.message->ReflectionOf(*entry);
    if (!Printable(value_field, er, *entry, -1)) continue;
    if (!first) out.Put(',');
    first = false;
    out.AppendString(key);
    WriteValue(out, ":", value_field, er, *entry, -1);
  }
  out.Put('}');
}

// A json_unwrap message: the value of its one set singular field, or null; a message whose
// one field is a list prints as that list (empty: []).
void WriteUnwrapped(JsonBuffer& out, const MessagePlan& plan, const Reflection* r, const Message& m) {
  if (plan.fields.size() == 1 && plan.fields[0].shape == Shape::kList) return WriteList(out, plan.fields[0], r, m);
  for (const FieldPlan& f : plan.fields) {
    if (f.shape == Shape::kList || f.shape == Shape::kMap || !r->HasField(m, f.field) || !Printable(f, r, m, -1)) {
      continue;
    }
    return WriteValue(out, {}, f, r, m, -1);
  }
  out.Append("null");
}

void WriteMessage(JsonBuffer& out, const MessagePlan& plan, const Message& m) {
  const Reflection* r = plan.ReflectionOf(m);
  if (plan.unwrap) return WriteUnwrapped(out, plan, r, m);
  out.Put('{');
  size_t skip_comma = 1;  // the first member's key is written without its comma
  for (const FieldPlan& f : plan.fields) {
    const std::string_view key = std::string_view(f.key).substr(skip_comma);
    switch (f.shape) {
      case Shape::kMap:
        out.Append(key);
        WriteMap(out, f, r, m);
        break;
      case Shape::kList:
        out.Append(key);
        WriteList(out, f, r, m);
        break;
      case Shape::kWhenSet:
        if (!r->HasField(m, f.field)) continue;
        [[fallthrough]];
      case Shape::kAlways:
        if (!Printable(f, r, m, -1)) continue;
        WriteValue(out, key, f, r, m, -1);
        break;
    }
    skip_comma = 0;
  }
  out.Put('}');
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  JsonBuffer buffer(out);
  buffer.AppendString(s);
}

void AppendProtoJson(std::string* out, const Message& message) {
  JsonBuffer buffer(out);
  WriteMessage(buffer, json_plan::PlanFor(message.GetDescriptor()), message);
}

std::string ProtoToJson(const Message& message) {
  std::string out;
  AppendProtoJson(&out, message);
  return out;
}

std::string ProtoToProto3Json(const Message& message) {
  std::string out;
  {
    JsonBuffer buffer(&out);
    WriteMessage(buffer, json_plan::PlanFor(message.GetDescriptor(), json_plan::JsonStyle::kProto3), message);
  }
  return out;
}

absl::Status ProtoFromJson(std::string_view json, Message* message, bool ignore_unknown_fields) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = ignore_unknown_fields;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("request body: ", status.message().as_string()));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
