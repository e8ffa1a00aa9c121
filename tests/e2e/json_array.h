#pragma once
// Reading the CLI's and the HTTP API's JSON in tests.

#include "simdjson.h"

namespace fleetprof::testing {

// An array to loop over: a range-for over `x.get_array().value()` keeps a reference into a
// temporary that dies before the loop runs (AddressSanitizer: stack-use-after-scope).
inline simdjson::dom::array Array(simdjson::simdjson_result<simdjson::dom::element> e) {
  return e.get_array().value();
}

}  // namespace fleetprof::testing
