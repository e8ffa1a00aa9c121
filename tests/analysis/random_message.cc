#include "tests/analysis/random_message.h"

#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace fleetprof::testing {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Pieces a string is made of: plain text, the characters JSON must escape, valid multi-byte
// UTF-8 (2, 3 and 4 bytes, U+FFFD and U+10FFFF themselves) and bytes that are not valid UTF-8
// (stray continuation, overlong, surrogate, past U+10FFFF, a cut sequence, 0xFF).
const std::vector<std::string>& Pieces() {
  static const auto* pieces = new std::vector<std::string>{
      "a", "Z", "0", " ", "void f<int>(x)", "ProfilerStep#12", "/", "'", "<", "\x7f",
      "\"", "\\", "\n", "\r", "\t", "\b", "\f", std::string(1, '\0'), "\x01", "\x1f",
      "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xef\xbf\xbd", "\xf4\x8f\xbf\xbf", "\xc2\x80",
      "\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe4\xb8", "\xf0\x9f\x98",
      "\xf5", "\xff", "\xc3"};
  return *pieces;
}

}  // namespace

const std::string& RandomMessageFiller::Piece() {
  const auto& pieces = Pieces();
  return pieces[static_cast<size_t>(Below(static_cast<int>(pieces.size())))];
}

std::string RandomMessageFiller::String() {
  std::string s;
  if (Chance(0.15)) return s;
  if (Chance(0.04)) {
    // Past the 4 KiB escaping slice, mostly text that is copied a word at a time, with a
    // multi-byte character or an escape now and then (some across a slice boundary).
    const size_t n = 4000 + static_cast<size_t>(Below(5000));
    while (s.size() < n) s += Chance(0.02) ? Piece() : "abcdefg";
    return s;
  }
  const int n = Below(24);
  for (int i = 0; i < n; ++i) {
    // Runs of plain text between the odd pieces, so that 8-byte words are both clean and not.
    s += Chance(0.5) ? Piece() : std::string(static_cast<size_t>(Below(12)), 'x');
  }
  return s;
}

int64_t RandomMessageFiller::Int64() {
  switch (Below(8)) {
    case 0:
      return 0;
    case 1:
      return std::numeric_limits<int64_t>::max();
    case 2:
      return std::numeric_limits<int64_t>::min();
    case 3:
      return -1;
    case 4:
      return 1712195495505582988;  // a wall-clock time in ns
    case 5:
      return static_cast<int64_t>(rng_());
    default:
      return Below(2000000) - 1000000;
  }
}

uint64_t RandomMessageFiller::UInt64() {
  switch (Below(4)) {
    case 0:
      return 0;
    case 1:
      return std::numeric_limits<uint64_t>::max();
    case 2:
      return rng_();
    default:
      return static_cast<uint64_t>(Below(100000));
  }
}

int32_t RandomMessageFiller::Int32() {
  switch (Below(5)) {
    case 0:
      return 0;
    case 1:
      return std::numeric_limits<int32_t>::max();
    case 2:
      return std::numeric_limits<int32_t>::min();
    case 3:
      return static_cast<int32_t>(rng_());
    default:
      return Below(2000) - 1000;
  }
}

uint32_t RandomMessageFiller::UInt32() {
  return Chance(0.3) ? std::numeric_limits<uint32_t>::max() * Chance(0.5) : static_cast<uint32_t>(rng_());
}

double RandomMessageFiller::Double() {
  static const double kSpecial[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -1.0,
                                    0.1,
                                    1.5e11,
                                    1e21,
                                    1e-7,
                                    std::numeric_limits<double>::quiet_NaN(),
                                    std::numeric_limits<double>::infinity(),
                                    -std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::denorm_min(),
                                    std::numeric_limits<double>::min(),
                                    std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::lowest()};
  if (Chance(0.6)) return kSpecial[Below(static_cast<int>(std::size(kSpecial)))];
  return std::uniform_real_distribution<double>(-1, 1)(rng_) * std::pow(10.0, Below(40) - 20);
}

void RandomMessageFiller::SetValue(Message* m, const FieldDescriptor* f, int depth) {
  const auto* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->SetInt32(m, f, Int32());
    case FieldDescriptor::CPPTYPE_INT64:
      return r->SetInt64(m, f, Int64());
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->SetUInt32(m, f, UInt32());
    case FieldDescriptor::CPPTYPE_UINT64:
      return r->SetUInt64(m, f, UInt64());
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r->SetDouble(m, f, Double());
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r->SetFloat(m, f, static_cast<float>(Double()));
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->SetBool(m, f, Chance(0.5));
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* type = f->enum_type();
      // Open (proto3) enums also hold numbers that have no name, which print as numbers.
      const bool open = type->file()->syntax() == google::protobuf::FileDescriptor::SYNTAX_PROTO3;
      const int v = open && Chance(0.2) ? Int32() : type->value(Below(type->value_count()))->number();
      return r->SetEnumValue(m, f, v);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return r->SetString(m, f, String());
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return Fill(r->MutableMessage(m, f), depth - 1);
  }
}

void RandomMessageFiller::AddValue(Message* m, const FieldDescriptor* f, int depth) {
  const auto* r = m->GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return r->AddInt32(m, f, Int32());
    case FieldDescriptor::CPPTYPE_INT64:
      return r->AddInt64(m, f, Int64());
    case FieldDescriptor::CPPTYPE_UINT32:
      return r->AddUInt32(m, f, UInt32());
    case FieldDescriptor::CPPTYPE_UINT64:
      return r->AddUInt64(m, f, UInt64());
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return r->AddDouble(m, f, Double());
    case FieldDescriptor::CPPTYPE_FLOAT:
      return r->AddFloat(m, f, static_cast<float>(Double()));
    case FieldDescriptor::CPPTYPE_BOOL:
      return r->AddBool(m, f, Chance(0.5));
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* type = f->enum_type();
      const bool open = type->file()->syntax() == google::protobuf::FileDescriptor::SYNTAX_PROTO3;
      const int v = open && Chance(0.2) ? Int32() : type->value(Below(type->value_count()))->number();
      return r->AddEnumValue(m, f, v);
    }
    case FieldDescriptor::CPPTYPE_STRING:
      return r->AddString(m, f, String());
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return Fill(r->AddMessage(m, f), depth - 1);
  }
}

void RandomMessageFiller::Fill(Message* message, int depth) {
  const auto* descriptor = message->GetDescriptor();
  const auto* r = message->GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* f = descriptor->field(i);
    const bool nested = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && !f->is_map();
    if (nested && depth <= 0) continue;
    if (!f->is_repeated()) {
      if (Chance(0.3)) continue;  // unset: a zero that prints, or an optional that does not
      SetValue(message, f, depth);
      continue;
    }
    const int n = Chance(0.3) ? 0 : Below(5);  // empty lists and maps are common
    std::set<std::string> keys;
    for (int k = 0; k < n; ++k) {
      AddValue(message, f, depth);
      if (!f->is_map()) continue;
      // A map holds a key once: drop an entry whose key is already there.
      const Message& entry = r->GetRepeatedMessage(*message, f, r->FieldSize(*message, f) - 1);
      const FieldDescriptor* key = f->message_type()->map_key();
      const auto* er = entry.GetReflection();
      std::string text;
      switch (key->cpp_type()) {
        case FieldDescriptor::CPPTYPE_STRING:
          text = er->GetString(entry, key);
          break;
        case FieldDescriptor::CPPTYPE_BOOL:
          text = er->GetBool(entry, key) ? "true" : "false";
          break;
        case FieldDescriptor::CPPTYPE_INT32:
          text = absl::StrCat(er->GetInt32(entry, key));
          break;
        case FieldDescriptor::CPPTYPE_INT64:
          text = absl::StrCat(er->GetInt64(entry, key));
          break;
        case FieldDescriptor::CPPTYPE_UINT32:
          text = absl::StrCat(er->GetUInt32(entry, key));
          break;
        default:
          text = absl::StrCat(er->GetUInt64(entry, key));
      }
      if (!keys.insert(text).second) r->RemoveLast(message, f);
    }
  }
}

}  // namespace fleetprof::testing
