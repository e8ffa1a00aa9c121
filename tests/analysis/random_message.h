#pragma once
// Random messages of any type, filled through Reflection, for comparing JSON writers: the
// values a writer gets wrong (int64 extremes, zeros, NaN, -0.0, empty lists and maps, unset
// and explicitly-zero optionals, enum numbers without a name) and strings with quotes,
// backslashes, control characters, multi-byte UTF-8 and invalid bytes, some longer than the
// writer's 4 KiB escaping slice.

#include <cstdint>
#include <random>
#include <string>

#include "google/protobuf/message.h"

namespace fleetprof::testing {

class RandomMessageFiller {
 public:
  explicit RandomMessageFiller(uint64_t seed) : rng_(seed) {}

  // Sets a random subset of `message`'s fields; nested messages down to `depth` levels.
  void Fill(google::protobuf::Message* message, int depth = 3);

  // A string of plain text and odd pieces (see random_message.cc), now and then empty or long.
  std::string String();

 private:
  const std::string& Piece();

  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int Below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  int64_t Int64();
  uint64_t UInt64();
  int32_t Int32();
  uint32_t UInt32();
  double Double();
  void SetValue(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field, int depth);
  void AddValue(google::protobuf::Message* message, const google::protobuf::FieldDescriptor* field, int depth);

  std::mt19937_64 rng_;
};

}  // namespace fleetprof::testing
