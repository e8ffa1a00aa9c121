#pragma once
// The reflection walk that was fleetprof's JSON writer until the compiled plans: the oracle
// that the production writer (proto/proto_json.h) is compared with, byte for byte.

#include <string>
#include <string_view>

#include "google/protobuf/message.h"

namespace fleetprof::reference {

std::string ProtoToJson(const google::protobuf::Message& message);
void AppendProtoJson(std::string* out, const google::protobuf::Message& message);
void AppendJsonString(std::string* out, std::string_view s);

}  // namespace fleetprof::reference
