#pragma once
// A URL's query string into the request message of a route (api/api_catalog.h), field by
// field as the .proto declares: integers, bools (0/1, true/false), strings, one value per
// occurrence for a repeated field, NAME=KEY=VALUE per occurrence for a map. Every parameter
// the route does not take is a 400 naming it and listing those it does, so a typo is never
// a filter silently ignored.

#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "api/api_catalog.h"
#include "google/protobuf/message.h"

namespace fleetprof {

// Percent-decoding of one URL component ('+' is a space where `plus_is_space`, as in a query
// string). INVALID_ARGUMENT for a malformed %XX or a result that is not valid UTF-8.
absl::StatusOr<std::string> DecodeUrlComponent(absl::string_view text, bool plus_is_space);

// Sets the fields of `request` that `raw_query` (the text after '?', still encoded) names.
// REQUIRES: `request` is of route.method's input type.
absl::Status FillFromQuery(const ApiRoute& route, absl::string_view raw_query, google::protobuf::Message* request);

// Sets one scalar field (or appends to a repeated one) from its text form; `name` is what
// the error calls it. Used for path segments too.
absl::Status SetFieldFromText(const google::protobuf::FieldDescriptor* field, absl::string_view name,
                              absl::string_view text, google::protobuf::Message* message);

}  // namespace fleetprof
