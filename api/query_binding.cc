#include "api/query_binding.h"

#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/utf8.h"

namespace fleetprof {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsValidUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = Utf8SequenceLength(std::string_view(text.data(), text.size()), i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

absl::Status NotAn(absl::string_view name, absl::string_view what, absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("query parameter '", name, "' must be ", what, ", not '", text, "'"));
}

// One value into a field of `message` (singular: set; repeated: appended).
absl::Status SetScalar(const FieldDescriptor* field, absl::string_view name, absl::string_view text, Message* message) {
  const Reflection* r = message->GetReflection();
  const bool repeated = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      if (!IsValidUtf8(text)) return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not valid UTF-8"));
      repeated ? r->AddString(message, field, std::string(text)) : r->SetString(message, field, std::string(text));
      return absl::OkStatus();
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t value = 0;
      if (!absl::SimpleAtoi(text, &value)) return NotAn(name, "an integer", text);
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_INT32) {
        if (value < INT32_MIN || value > INT32_MAX) {
          return absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' is out of range"));
        }
        const auto v32 = static_cast<int32_t>(value);
        repeated ? r->AddInt32(message, field, v32) : r->SetInt32(message, field, v32);
      } else {
        repeated ? r->AddInt64(message, field, value) : r->SetInt64(message, field, value);
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t value = 0;
      if (!absl::SimpleAtoi(text, &value)) return NotAn(name, "a non-negative integer", text);
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
        if (value > UINT32_MAX) {
          return absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' is out of range"));
        }
        const auto v32 = static_cast<uint32_t>(value);
        repeated ? r->AddUInt32(message, field, v32) : r->SetUInt32(message, field, v32);
      } else {
        repeated ? r->AddUInt64(message, field, value) : r->SetUInt64(message, field, value);
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      double value = 0;
      if (!absl::SimpleAtod(text, &value)) return NotAn(name, "a number", text);
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
        repeated ? r->AddFloat(message, field, static_cast<float>(value))
                 : r->SetFloat(message, field, static_cast<float>(value));
      } else {
        repeated ? r->AddDouble(message, field, value) : r->SetDouble(message, field, value);
      }
      return absl::OkStatus();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      // Absent or empty reads as false, as an unchecked box leaves it.
      bool value;
      if (text.empty() || text == "0" || text == "false") {
        value = false;
      } else if (text == "1" || text == "true") {
        value = true;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' must be 0/1 or true/false"));
      }
      repeated ? r->AddBool(message, field, value) : r->SetBool(message, field, value);
      return absl::OkStatus();
    }
    default:
      return absl::InternalError(absl::StrCat("query parameter '", name, "' fills a field of no text form"));
  }
}

// NAME=KEY=VALUE: one entry of a map field.
absl::Status AddMapEntry(const FieldDescriptor* field, absl::string_view name, absl::string_view text,
                         Message* message) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) return NotAn(name, "key=value", text);
  const absl::string_view key = text.substr(0, eq);
  const absl::string_view value = text.substr(eq + 1);
  const FieldDescriptor* key_field = field->message_type()->map_key();
  const FieldDescriptor* value_field = field->message_type()->map_value();
  // A later KEY replaces an earlier one, as in the map it becomes.
  const Reflection* r = message->GetReflection();
  const int size = r->FieldSize(*message, field);
  for (int i = 0; i < size; ++i) {
    const Message& entry = r->GetRepeatedMessage(*message, field, i);
    if (entry.GetReflection()->GetString(entry, key_field) == key) {
      r->SwapElements(message, field, i, size - 1);
      r->RemoveLast(message, field);
      break;
    }
  }
  Message* entry = r->AddMessage(message, field);
  entry->GetReflection()->SetString(entry, key_field, std::string(key));
  absl::Status set = SetScalar(value_field, name, value, entry);
  if (!set.ok() && value_field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
    r->RemoveLast(message, field);
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter '", name, "': the value of '", key, "' must be a number, not '", value, "'"));
  }
  return set;
}

}  // namespace

absl::StatusOr<std::string> DecodeUrlComponent(absl::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else if (c == '%') {
      const int hi = i + 2 < text.size() ? HexValue(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? HexValue(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return absl::InvalidArgumentError(absl::StrCat("malformed %-escape in '", text, "'"));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  if (!IsValidUtf8(out)) return absl::InvalidArgumentError("a URL component is not valid UTF-8");
  return out;
}

absl::Status SetFieldFromText(const FieldDescriptor* field, absl::string_view name, absl::string_view text,
                              Message* message) {
  if (field->is_map()) return AddMapEntry(field, name, text, message);
  return SetScalar(field, name, text, message);
}

absl::Status FillFromQuery(const ApiRoute& route, absl::string_view raw_query, Message* request) {
  std::set<std::string> given;   // names seen
  std::set<std::string> filled;  // names seen with a value
  for (absl::string_view piece : absl::StrSplit(raw_query, '&', absl::SkipEmpty())) {
    const size_t eq = piece.find('=');
    absl::StatusOr<std::string> name = DecodeUrlComponent(piece.substr(0, eq), true);
    if (!name.ok()) return name.status();
    auto it = route.query.find(*name);
    if (it == route.query.end()) {
      std::vector<std::string> names;
      for (const auto& [known, field] : route.query) names.push_back(known);
      return absl::InvalidArgumentError(absl::StrCat("unknown query parameter '", *name, "' (this route takes: ",
                                                     names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
    }
    absl::StatusOr<std::string> value =
        DecodeUrlComponent(eq == absl::string_view::npos ? "" : piece.substr(eq + 1), true);
    if (!value.ok()) return value.status();
    const FieldDescriptor* field = it->second;
    // A singular field takes its first occurrence, as the API always has.
    const bool first = given.insert(*name).second;
    if (!value->empty()) filled.insert(*name);
    if (!field->is_repeated() && !first) continue;
    if (absl::Status set = SetFieldFromText(field, *name, *value, request); !set.ok()) return set;
  }
  for (const std::string& name : route.required) {
    if (!filled.count(name)) {  // present but empty is as good as absent
      return absl::InvalidArgumentError(absl::StrCat("query parameter '", name, "' is required"));
    }
  }
  return absl::OkStatus();
}

}  // namespace fleetprof
