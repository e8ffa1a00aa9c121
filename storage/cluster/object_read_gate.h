#pragma once
// Bounds the object-store reads that queries wait on, so that a silent or slow store cannot
// take every query worker: with S3 silent, each uncached read holds its worker until its
// caller's deadline (CallBounds), and without a bound ten such queries would leave none for
// the catalog-only and cached queries that need no object store at all.
//
// Reads made for a call (under ScopedCallBounds: gRPC and HTTP queries) take one of `slots`
// for the length of the request; one that finds none free within `wait` (or its caller's
// time, if shorter) is UNAVAILABLE at once, naming the store, and its worker goes on to the
// next query. Reads with no call around them (uploads, retention, the leader's collection)
// and all writes pass untouched: they run on their own workers.

#include <chrono>
#include <memory>

#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

struct ObjectReadGateOptions {
  int slots = 4;
  std::chrono::milliseconds wait{1000};
};

std::unique_ptr<ObjectClient> NewObjectReadGate(std::unique_ptr<ObjectClient> inner, const ObjectReadGateOptions& options);

}  // namespace fleetprof::cluster
