// A datagram on the Kineto IPC socket: header, then a "req" or "ctxt" payload.
#include <cstdint>
#include <string>

#include "collectors/kineto_ipc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetprof;
  KinetoDatagram datagram;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!DecodeKinetoDatagram(bytes, "fuzz", &datagram).ok()) {
    // The payload parsers also see raw bytes, as a datagram with a valid header would carry.
    (void)ParseKinetoPoll(bytes);
    (void)ParseKinetoContext(bytes);
    return 0;
  }
  if (datagram.type == kKinetoPollType) (void)ParseKinetoPoll(datagram.payload);
  if (datagram.type == kKinetoContextType) (void)ParseKinetoContext(datagram.payload);
  return 0;
}
