#pragma once
// How each message type prints as JSON, compiled once from its Descriptor and cached for the
// life of the process. The writer (proto_json.cc) walks a plan instead of asking the
// descriptor the same questions for every element of a repeated field: which fields, in which
// order, of what type, with presence or not, how the key is spelled (escaped once here, with
// its comma), what an enum number is called. A .proto change reaches the JSON with no code
// change, because the plan is read off the same descriptors the messages are generated from.

#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace fleetprof::json_plan {

// The C++ type of a value, which decides the Reflection getter and the JSON form.
enum class ValueKind : uint8_t { kInt32, kInt64, kUInt32, kUInt64, kDouble, kFloat, kBool, kEnum, kString, kMessage };

// Which JSON: fleetprof's own (field names, integers as numbers: proto_json.h), or proto3's
// canonical mapping (json_name in lowerCamelCase, 64-bit integers as strings) for the clients
// of a foreign protocol (Pyroscope's, server/http/connect_api.h).
enum class JsonStyle : uint8_t { kFleetprof, kProto3 };

// How a member appears: always (implicit presence), only when set, as a list, as an object.
enum class Shape : uint8_t { kAlways, kWhenSet, kList, kMap };

struct MessagePlan;

struct FieldPlan {
  const google::protobuf::FieldDescriptor* field = nullptr;
  ValueKind kind = ValueKind::kInt32;
  Shape shape = Shape::kAlways;
  // `,"name":` — a message's first member is written from key.data() + 1.
  std::string key;
  // Integers written as strings (proto3 JSON's int64 and uint64).
  bool quoted = false;
  // kMessage: the value's plan. kMap: the entry's (its fields[0] the key, fields[1] the value).
  const MessagePlan* message = nullptr;
  // kEnum: the quoted name of each number (the first value declared with it, as
  // EnumDescriptor::FindValueByNumber answers); a number missing here prints as a number.
  absl::flat_hash_map<int, std::string> enum_names;
};

struct MessagePlan {
  // The json_unwrap option (json_options.proto): the message prints as its one set field.
  bool unwrap = false;
  std::vector<FieldPlan> fields;  // in declaration order
  // The generated class of the type and its Reflection, when the type has one. Asking a
  // generated message for its Reflection runs a call_once check (a thread-local access and a
  // pthread_once) every time: 7% of the old writer's samples, paid per element of a list. A
  // message whose class is this one uses `reflection` instead; any other (a DynamicMessage)
  // is asked as before.
  const std::type_info* generated_type = nullptr;
  const google::protobuf::Reflection* reflection = nullptr;

  const google::protobuf::Reflection* ReflectionOf(const google::protobuf::Message& m) const {
    return &typeid(m) == generated_type ? reflection : m.GetReflection();
  }
};

// The plan of `descriptor` in `style`, built on first use (with those of the messages it
// contains). Thread-safe; the reference stays valid for the life of the process.
const MessagePlan& PlanFor(const google::protobuf::Descriptor* descriptor, JsonStyle style = JsonStyle::kFleetprof);

}  // namespace fleetprof::json_plan
