// One request of the dynolog-compatible TCP API (`dyno gputrace`), as JSON, to an endpoint
// with no processes registered and no trace folder: parsing and validation, every branch.
#include <cstdint>
#include <string>

#include "collectors/dynolog_api.h"
#include "collectors/kineto_endpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetprof;
  static KinetoEndpoint* endpoint = new KinetoEndpoint(KinetoEndpoint::Options{});
  static DynologApiServer* api = [] {
    DynologApiServer::Options options;
    options.listen_address = "127.0.0.1:0";  // never started
    options.log_dir = "/nonexistent/fleetprof-fuzz";
    return new DynologApiServer(*endpoint, options);
  }();
  // As root, so that a trace request is read all the way.
  (void)api->HandleRequest(std::string_view(reinterpret_cast<const char*>(data), size), 0);
  return 0;
}
