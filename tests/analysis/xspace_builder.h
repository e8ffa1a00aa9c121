#pragma once
// Builds XSpace bytes by hand for the analysis tests: a protobuf message writer and the
// XPlane pieces (events with stats, lines, metadata), field numbers per docs/protocols.md, XSpace.

#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fleetprof::analysis::testing {

// A protobuf message under construction.
class Proto {
 public:
  Proto& Varint(int field, uint64_t value) {
    Key(field, 0);
    PutVarint(value);
    return *this;
  }
  Proto& Bytes(int field, const std::string& value) {
    Key(field, 2);
    PutVarint(value.size());
    bytes_ += value;
    return *this;
  }
  Proto& Message(int field, const Proto& message) { return Bytes(field, message.bytes_); }
  Proto& Fixed64(int field, uint64_t value) {
    Key(field, 1);
    bytes_.append(reinterpret_cast<const char*>(&value), 8);
    return *this;
  }
  Proto& Fixed32(int field, uint32_t value) {
    Key(field, 5);
    bytes_.append(reinterpret_cast<const char*>(&value), 4);
    return *this;
  }
  Proto& Raw(const std::string& bytes) {
    bytes_ += bytes;
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  void Key(int field, int wire) { PutVarint((static_cast<uint64_t>(field) << 3) | wire); }
  void PutVarint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
  }
  std::string bytes_;
};

// XStat values, by stat metadata id.
inline Proto IntStat(int64_t id, int64_t value) {
  return Proto().Varint(1, id).Varint(4, static_cast<uint64_t>(value));
}
inline Proto UintStat(int64_t id, uint64_t value) { return Proto().Varint(1, id).Varint(3, value); }
inline Proto DoubleStat(int64_t id, double value) {
  return Proto().Varint(1, id).Fixed64(2, std::bit_cast<uint64_t>(value));
}
inline Proto StrStat(int64_t id, const std::string& value) {
  return Proto().Varint(1, id).Bytes(5, value);
}
// A ref_value: the text is the name of stat_metadata entry `ref`.
inline Proto RefStat(int64_t id, int64_t ref) { return Proto().Varint(1, id).Varint(7, ref); }

inline Proto Event(int64_t metadata_id, int64_t offset_ps, int64_t duration_ps) {
  return Proto().Varint(1, metadata_id).Varint(2, offset_ps).Varint(3, duration_ps);
}
inline Proto Event(int64_t metadata_id, int64_t offset_ps, int64_t duration_ps,
                   const std::vector<Proto>& stats) {
  Proto event = Event(metadata_id, offset_ps, duration_ps);
  for (const Proto& s : stats) event.Message(4, s);
  return event;
}

// An event_metadata map entry (key 1, XEventMetadata 2), with stats (XEventMetadata 5).
inline Proto Metadata(int64_t id, const std::string& name, const std::vector<Proto>& stats = {}) {
  Proto value = Proto().Varint(1, id).Bytes(2, name);
  for (const Proto& s : stats) value.Message(5, s);
  return Proto().Varint(1, id).Message(2, value);
}

// A stat_metadata map entry (key 1, XStatMetadata {id 1, name 2}).
inline Proto StatMetadata(int64_t id, const std::string& name) {
  return Proto().Varint(1, id).Message(2, Proto().Varint(1, id).Bytes(2, name));
}

inline Proto Line(const std::string& name, int64_t timestamp_ns, const std::vector<Proto>& events) {
  Proto line;
  line.Varint(1, 7).Bytes(2, name).Varint(3, timestamp_ns);
  for (const Proto& e : events) line.Message(4, e);
  return line;
}

// A plane: lines first, then event metadata, as XProf serialises it.
inline Proto Plane(const std::string& name, const std::vector<Proto>& lines,
                   const std::vector<std::pair<int64_t, std::string>>& metadata) {
  Proto plane;
  plane.Varint(1, 42).Bytes(2, name);
  for (const Proto& l : lines) plane.Message(3, l);
  for (const auto& [id, n] : metadata) plane.Message(4, Metadata(id, n));
  return plane;
}

// A plane in writers' field order: name, lines, event metadata (entries as built by
// Metadata), then stat metadata — the names come after everything that uses them.
inline Proto Plane(const std::string& name, const std::vector<Proto>& lines,
                   const std::vector<Proto>& event_metadata,
                   const std::vector<std::pair<int64_t, std::string>>& stat_names) {
  Proto plane;
  plane.Varint(1, 42).Bytes(2, name);
  for (const Proto& l : lines) plane.Message(3, l);
  for (const Proto& m : event_metadata) plane.Message(4, m);
  for (const auto& [id, n] : stat_names) plane.Message(5, StatMetadata(id, n));
  return plane;
}

inline std::string Space(const std::vector<Proto>& planes) {
  Proto space;
  for (const Proto& p : planes) space.Message(1, p);
  return space.bytes();
}

}  // namespace fleetprof::analysis::testing
