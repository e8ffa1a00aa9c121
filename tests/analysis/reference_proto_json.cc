// The JSON writer as it was before the compiled plans (proto/json_plan.h): a walk that asks
// Reflection and the descriptor about every field of every message. Kept only as the oracle
// of proto_json_plan_test, which requires the production writer to print exactly the same
// bytes for any message, so the two cannot drift apart.
#include "tests/analysis/reference_proto_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/utf8.h"
#include "fleetprof/v1/json_options.pb.h"
#include "google/protobuf/descriptor.h"

namespace fleetprof::reference {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

void AppendDouble(std::string* out, double value) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  out->append(buf, end);
}

// A double member is left out entirely when not finite; everything else always prints.
bool Printable(const Message& message, const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
    double v = index < 0 ? r->GetDouble(message, field) : r->GetRepeatedDouble(message, field, index);
    return std::isfinite(v);
  }
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    float v = index < 0 ? r->GetFloat(message, field) : r->GetRepeatedFloat(message, field, index);
    return std::isfinite(v);
  }
  return true;
}

// Writes one value of `field`: the singular value (index < 0) or element `index`.
void AppendValue(std::string* out, const Message& message, const FieldDescriptor* field, int index) {
  const Reflection* r = message.GetReflection();
  const bool rep = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      absl::StrAppend(out, rep ? r->GetRepeatedInt32(message, field, index) : r->GetInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_INT64:
      absl::StrAppend(out, rep ? r->GetRepeatedInt64(message, field, index) : r->GetInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT32:
      absl::StrAppend(out, rep ? r->GetRepeatedUInt32(message, field, index) : r->GetUInt32(message, field));
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      absl::StrAppend(out, rep ? r->GetRepeatedUInt64(message, field, index) : r->GetUInt64(message, field));
      break;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      AppendDouble(out, rep ? r->GetRepeatedDouble(message, field, index) : r->GetDouble(message, field));
      break;
    case FieldDescriptor::CPPTYPE_FLOAT:
      AppendDouble(out, rep ? r->GetRepeatedFloat(message, field, index) : r->GetFloat(message, field));
      break;
    case FieldDescriptor::CPPTYPE_BOOL:
      out->append((rep ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field)) ? "true"
                                                                                                  : "false");
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      int number = rep ? r->GetRepeatedEnumValue(message, field, index) : r->GetEnumValue(message, field);
      const auto* value = field->enum_type()->FindValueByNumber(number);
      if (value != nullptr) {
        AppendJsonString(out, value->name());
      } else {
        absl::StrAppend(out, number);  // a value newer than this binary
      }
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string scratch;
      const std::string& s = rep ? r->GetRepeatedStringReference(message, field, index, &scratch)
                                 : r->GetStringReference(message, field, &scratch);
      AppendJsonString(out, s);
      break;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      AppendProtoJson(out, rep ? r->GetRepeatedMessage(message, field, index) : r->GetMessage(message, field));
      break;
  }
}

// A map field is a repeated entry message {key=1, value=2}; printed as an object by key.
void AppendMap(std::string* out, const Message& message, const FieldDescriptor* field) {
  const Reflection* r = message.GetReflection();
  const int n = r->FieldSize(message, field);
  const FieldDescriptor* key_field = field->message_type()->map_key();
  const FieldDescriptor* value_field = field->message_type()->map_value();
  std::vector<std::pair<std::string, const Message*>> entries;
  entries.reserve(n);
  for (int i = 0; i < n; ++i) {
    const Message& entry = r->GetRepeatedMessage(message, field, i);
    const Reflection* er = entry.GetReflection();
    std::string key;
    switch (key_field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        key = er->GetString(entry, key_field);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        key = er->GetBool(entry, key_field) ? "true" : "false";
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        key = absl::StrCat(er->GetInt32(entry, key_field));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        key = absl::StrCat(er->GetInt64(entry, key_field));
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        key = absl::StrCat(er->GetUInt32(entry, key_field));
        break;
      default:
        key = absl::StrCat(er->GetUInt64(entry, key_field));
    }
    entries.emplace_back(std::move(key), &entry);
  }
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->push_back('{');
  bool first = true;
  for (const auto& [key, entry] : entries) {
    if (!Printable(*entry, value_field, -1)) continue;
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, key);
    out->push_back(':');
    AppendValue(out, *entry, value_field, -1);
  }
  out->push_back('}');
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending bytes that need no escaping
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t n = Utf8SequenceLength(s, i);
      if (n > 0) {
        i += n;
        continue;
      }
      out->append(s.data() + run, i - run);
      out->append("\xEF\xBF\xBD");  // U+FFFD for the invalid byte
      run = ++i;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    out->append(s.data() + run, i - run);
    run = ++i;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

// A repeated field's printable items as a JSON list.
static void AppendItems(std::string* out, const Message& message, const FieldDescriptor* field) {
  const Reflection* r = message.GetReflection();
  out->push_back('[');
  bool first_item = true;
  for (int i = 0; i < r->FieldSize(message, field); ++i) {
    if (!Printable(message, field, i)) continue;
    if (!first_item) out->push_back(',');
    first_item = false;
    AppendValue(out, message, field, i);
  }
  out->push_back(']');
}

void AppendProtoJson(std::string* out, const Message& message) {
  const auto* descriptor = message.GetDescriptor();
  const Reflection* r = message.GetReflection();
  if (descriptor->options().GetExtension(v1::json_unwrap)) {
    // A message of one list field prints as that list; else the value of its one set
    // (singular) field, or null.
    if (descriptor->field_count() == 1 && descriptor->field(0)->is_repeated() && !descriptor->field(0)->is_map()) {
      AppendItems(out, message, descriptor->field(0));
      return;
    }
    for (int f = 0; f < descriptor->field_count(); ++f) {
      const FieldDescriptor* field = descriptor->field(f);
      if (field->is_repeated() || !r->HasField(message, field) || !Printable(message, field, -1)) continue;
      AppendValue(out, message, field, -1);
      return;
    }
    out->append("null");
    return;
  }
  out->push_back('{');
  bool first = true;
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    if (field->is_repeated()) {
      if (field->is_map()) {
        if (!first) out->push_back(',');
        first = false;
        AppendJsonString(out, field->name());
        out->push_back(':');
        AppendMap(out, message, field);
        continue;
      }
      if (!first) out->push_back(',');
      first = false;
      AppendJsonString(out, field->name());
      out->push_back(':');
      AppendItems(out, message, field);
      continue;
    }
    if (field->has_presence() && !r->HasField(message, field)) continue;
    if (!Printable(message, field, -1)) continue;
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(out, field->name());
    out->push_back(':');
    AppendValue(out, message, field, -1);
  }
  out->push_back('}');
}

std::string ProtoToJson(const Message& message) {
  std::string out;
  out.reserve(1024);
  AppendProtoJson(&out, message);
  return out;
}

}  // namespace fleetprof::reference
