#pragma once
// The one JSON form of every fleetprof record (profiles, summary sections, captures, agents),
// derived from the proto definitions so that a field added to a .proto appears everywhere at
// once: `fleetprof ... --json`, `fleetprof analyze --json` and the HTTP API print through here.
//
// Rules (the API contract of docs/http-api.md, Routes):
// - members are named by proto field name (snake_case), in declaration order;
// - integers are JSON numbers, never strings (protobuf's own JSON quotes int64, which would
//   turn every *_ns into a string);
// - enums print as their value name ("INDEXED", "xprof");
// - fields with explicit presence (`optional`, messages) appear only when set; every other
//   scalar always, zero included, so a row has the same keys whether or not a value is 0;
// - maps are objects with keys sorted; doubles the shortest text that reads back the same,
//   left out when not finite (JSON has no NaN);
// - strings are valid UTF-8 on output: an invalid byte becomes U+FFFD.
//
// Each message type is read off its descriptor once, into a plan (json_plan.h) that the writer
// walks for every message of that type: a trace window prints thousands of events.

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace fleetprof {

std::string ProtoToJson(const google::protobuf::Message& message);
void AppendProtoJson(std::string* out, const google::protobuf::Message& message);

// proto3's canonical JSON for the clients of a foreign protocol (Pyroscope's Connect API):
// members by their json_name (lowerCamelCase), 64-bit integers as strings; every other rule
// as above. The same writer in another style, not a second writer.
std::string ProtoToProto3Json(const google::protobuf::Message& message);

// Appends `s` as a JSON string literal (quotes and escapes included).
void AppendJsonString(std::string* out, std::string_view s);

// Reads a request body into `message`: snake_case or lowerCamel names, numbers or numeric
// strings for integers. An unknown field (unless `ignore_unknown_fields`: a Connect client may
// send fields of a newer protocol) or a wrong type is INVALID_ARGUMENT naming it.
absl::Status ProtoFromJson(std::string_view json, google::protobuf::Message* message,
                           bool ignore_unknown_fields = false);

}  // namespace fleetprof
