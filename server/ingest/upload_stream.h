#pragma once
// What a transport hands the ingestor (server/ingestor.h): the messages of one upload, in order.

#include <string>

#include "fleetprof/v1/ingest.pb.h"

namespace fleetprof {

class UploadStream {
 public:
  virtual ~UploadStream() = default;
  // The next message; false at the end of the stream (or when it broke).
  virtual bool Read(v1::UploadRequest* message) = 0;
  // True once the client went away (an interrupted upload stays resumable).
  virtual bool Cancelled() = 0;
  // Where the upload comes from (an address without its port; "" when unknown): uploads at
  // once are limited per peer.
  virtual std::string Peer() { return ""; }
  // Breaks the stream off from another thread (an upload idle for too long): a Read waiting
  // returns false soon after, and Cancelled() turns true.
  virtual void Abort() {}
};

}  // namespace fleetprof
