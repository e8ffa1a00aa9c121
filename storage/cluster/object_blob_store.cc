#include "storage/cluster/object_blob_store.h"

#include <cstring>
#include <map>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/cluster/blob_codec.h"

namespace fleetprof::cluster {
namespace {

const std::string kSummaries = "summaries/";
const std::string kRaw = "raw/";
const std::string kEvents = "events/";
constexpr std::string_view kSegmentMagic = "FPSEG001";
constexpr int64_t kFooterBytes = 24;
// The tail read when a segment is opened: the footer and, nearly always, the whole index.
constexpr int64_t kTailBytes = 256 << 10;
// No stored value of fleetprof's is larger once decompressed (summaries, parts, blocks).
constexpr int64_t kMaxValueBytes = 512 << 20;

std::string PartKey(std::string_view name, int64_t offset) {
  return absl::StrFormat("%s%s/%016x", kRaw, EncodeKeyWord(name), static_cast<uint64_t>(offset));
}
std::string PartPrefix(std::string_view name) { return absl::StrCat(kRaw, EncodeKeyWord(name), "/"); }

bool ParseHexOffset(std::string_view text, uint64_t* offset) {
  return absl::SimpleHexAtoi(absl::string_view(text.data(), text.size()), offset);
}

// An upload's parts as (offset, key), in offset order (keys sort as their fixed-width offsets).
absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> ListPartKeys(ObjectClient* objects,
                                                                         std::string_view name) {
  const std::string prefix = PartPrefix(name);
  std::vector<std::pair<int64_t, std::string>> parts;
  absl::Status s = objects->List(prefix, [&](std::string_view key, int64_t) {
    uint64_t offset = 0;
    if (ParseHexOffset(key.substr(prefix.size()), &offset)) parts.emplace_back(static_cast<int64_t>(offset), std::string(key));
    return true;
  });
  if (!s.ok()) return s;
  return parts;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
bool GetVarint(std::string_view* in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && !in->empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    *v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return true;
  }
  return false;
}
void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetFixed64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  return v;
}

struct BlockPlace {
  int64_t offset = 0;
  int64_t length = 0;
};
using SegmentIndex = std::map<std::string, BlockPlace, std::less<>>;

class ObjectSegmentWriter : public SegmentWriter {
 public:
  ObjectSegmentWriter(ObjectClient* objects, std::string key) : objects_(objects), key_(std::move(key)) {}

  absl::Status Append(std::string_view name, std::string bytes) override {
    if (!writer_) {
      auto writer = objects_->NewWriter(key_);
      if (!writer.ok()) return writer.status();
      writer_ = *std::move(writer);
    }
    std::string frame = Compress(bytes);
    index_[std::string(name)] = {written_, static_cast<int64_t>(frame.size())};
    written_ += static_cast<int64_t>(frame.size());
    return writer_->Append(frame);
  }

  absl::Status Finish() override {
    if (!writer_) {
      auto writer = objects_->NewWriter(key_);
      if (!writer.ok()) return writer.status();
      writer_ = *std::move(writer);
    }
    std::string index;
    PutVarint(&index, index_.size());
    for (const auto& [name, place] : index_) {
      PutVarint(&index, name.size());
      index += name;
      PutVarint(&index, static_cast<uint64_t>(place.offset));
      PutVarint(&index, static_cast<uint64_t>(place.length));
    }
    std::string tail = Compress(index);
    const int64_t index_length = static_cast<int64_t>(tail.size());
    PutFixed64(&tail, static_cast<uint64_t>(written_));
    PutFixed64(&tail, static_cast<uint64_t>(index_length));
    tail += kSegmentMagic;
    if (absl::Status s = writer_->Append(tail); !s.ok()) return s;
    return writer_->Finish();
  }

 private:
  ObjectClient* objects_;
  std::string key_;
  std::unique_ptr<ObjectWriter> writer_;
  SegmentIndex index_;
  int64_t written_ = 0;
};

class ObjectSegmentReader : public SegmentReader {
 public:
  ObjectSegmentReader(ObjectClient* objects, std::string key, std::string name)
      : objects_(objects), key_(std::move(key)), name_(std::move(name)) {}

  absl::StatusOr<std::string> Read(std::string_view block) override {
    if (absl::Status s = EnsureOpen(); !s.ok()) return s;
    auto it = index_.find(block);
    if (it == index_.end()) return absl::NotFoundError(absl::StrCat("event store of profile ", name_, " has no block ", std::string(block)));
    auto frame = objects_->Get(key_, ByteRange{it->second.offset, it->second.length});
    if (!frame.ok()) return frame.status();
    return Decompress(*frame, kMaxValueBytes, absl::StrCat("event block ", std::string(block), " of profile ", name_));
  }

  absl::StatusOr<int64_t> BlockCount() {
    if (absl::Status s = EnsureOpen(); !s.ok()) return s;
    return static_cast<int64_t>(index_.size());
  }

 private:
  absl::Status EnsureOpen() {
    if (opened_) return absl::OkStatus();
    absl::Status s = Open();
    opened_ = s.ok();
    return s;
  }

  // Reads the footer and the index: a HEAD for the size and one ranged GET of the tail.
  absl::Status Open() {
    auto size = objects_->Size(key_);
    if (!size.ok()) {
      if (absl::IsNotFound(size.status())) return absl::NotFoundError(absl::StrCat("profile ", name_, " has no event store"));
      return size.status();
    }
    if (*size < kFooterBytes) return Damaged("shorter than its footer");
    const int64_t tail_start = std::max<int64_t>(0, *size - kTailBytes);
    auto tail = objects_->Get(key_, ByteRange{tail_start, *size - tail_start});
    if (!tail.ok()) return tail.status();
    if (static_cast<int64_t>(tail->size()) != *size - tail_start) return Damaged("read short");
    std::string_view footer = std::string_view(*tail).substr(tail->size() - kFooterBytes);
    if (footer.substr(16) != kSegmentMagic) return Damaged("no segment footer");
    const auto index_offset = static_cast<int64_t>(GetFixed64(footer));
    const auto index_length = static_cast<int64_t>(GetFixed64(footer.substr(8)));
    if (index_offset < 0 || index_length < 0 || index_offset + index_length != *size - kFooterBytes) {
      return Damaged("footer does not match the object's size");
    }
    std::string frame;
    if (index_offset >= tail_start) {
      frame = tail->substr(static_cast<size_t>(index_offset - tail_start), static_cast<size_t>(index_length));
    } else {
      auto read = objects_->Get(key_, ByteRange{index_offset, index_length});
      if (!read.ok()) return read.status();
      frame = *std::move(read);
    }
    auto index = Decompress(frame, kMaxValueBytes, absl::StrCat("event store index of profile ", name_));
    if (!index.ok()) return index.status();
    std::string_view in = *index;
    uint64_t count = 0;
    if (!GetVarint(&in, &count)) return Damaged("index");
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t name_length = 0, offset = 0, length = 0;
      if (!GetVarint(&in, &name_length) || name_length > in.size()) return Damaged("index");
      std::string name(in.substr(0, name_length));
      in.remove_prefix(name_length);
      if (!GetVarint(&in, &offset) || !GetVarint(&in, &length) || offset + length > static_cast<uint64_t>(index_offset)) {
        return Damaged("index entry");
      }
      index_[std::move(name)] = {static_cast<int64_t>(offset), static_cast<int64_t>(length)};
    }
    return absl::OkStatus();
  }

  absl::Status Damaged(std::string_view what) const {
    return absl::DataLossError(absl::StrCat("event store of profile ", name_, " (", objects_->Describe(), key_, ") is damaged: ", std::string(what)));
  }

  ObjectClient* objects_;
  std::string key_;
  std::string name_;
  bool opened_ = false;
  SegmentIndex index_;
};

// An upload's parts back in order, one part in memory at a time.
class ObjectPartSource : public analysis::ByteSource {
 public:
  ObjectPartSource(ObjectClient* objects, std::string name, int64_t length)
      : objects_(objects), name_(std::move(name)), left_(std::max<int64_t>(length, 0)) {}

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (!listed_) {
      if (absl::Status s = ListParts(); !s.ok()) return s;
      listed_ = true;
    }
    while (pos_ >= chunk_.size()) {
      if (left_ == 0 || next_ >= parts_.size()) return 0;
      const auto& [offset, key] = parts_[next_++];
      if (offset != read_) return 0;  // a gap: the bytes after it were never counted
      auto frame = objects_->Get(key);
      if (!frame.ok()) return frame.status();
      auto bytes = Decompress(*frame, kMaxValueBytes, absl::StrCat("uploaded bytes of ", name_, " at ", offset));
      if (!bytes.ok()) return bytes.status();
      chunk_ = *std::move(bytes);
      read_ += static_cast<int64_t>(chunk_.size());
      if (static_cast<int64_t>(chunk_.size()) > left_) chunk_.resize(static_cast<size_t>(left_));
      left_ -= static_cast<int64_t>(chunk_.size());
      pos_ = 0;
    }
    const size_t take = std::min(n, chunk_.size() - pos_);
    std::memcpy(buf, chunk_.data() + pos_, take);
    pos_ += take;
    return take;
  }
  const std::string& name() const override { return name_; }

 private:
  absl::Status ListParts() {
    auto parts = ListPartKeys(objects_, name_);
    if (!parts.ok()) return parts.status();
    parts_ = *std::move(parts);
    return absl::OkStatus();
  }

  ObjectClient* objects_;
  std::string name_;
  int64_t left_;
  bool listed_ = false;
  std::vector<std::pair<int64_t, std::string>> parts_;
  size_t next_ = 0;
  int64_t read_ = 0;
  std::string chunk_;
  size_t pos_ = 0;
};

class ObjectBlobStore : public BlobStore {
 public:
  explicit ObjectBlobStore(ObjectClient* objects) : objects_(objects) {}

  absl::Status PutObject(std::string_view name, std::string_view bytes) override {
    return objects_->Put(absl::StrCat(kSummaries, EncodeKeyWord(name)), Compress(bytes));
  }
  absl::StatusOr<std::string> GetObject(std::string_view name) override {
    auto frame = objects_->Get(absl::StrCat(kSummaries, EncodeKeyWord(name)));
    if (!frame.ok()) return frame.status();
    return Decompress(*frame, kMaxValueBytes, absl::StrCat("object ", std::string(name)));
  }
  absl::Status DeleteObject(std::string_view name) override {
    return objects_->Delete(absl::StrCat(kSummaries, EncodeKeyWord(name)));
  }
  absl::Status ListObjects(const BlobVisitor& visit) override { return ListNames(kSummaries, visit); }

  absl::Status PutPart(std::string_view name, int64_t offset, std::string_view bytes) override {
    return objects_->Put(PartKey(name, offset), Compress(bytes));
  }
  std::unique_ptr<analysis::ByteSource> ReadParts(std::string_view name, int64_t length) override {
    return std::make_unique<ObjectPartSource>(objects_, std::string(name), length);
  }
  absl::Status DeleteParts(std::string_view name, Reclaim) override {
    std::vector<std::string> keys;
    absl::Status s = objects_->List(PartPrefix(name), [&](std::string_view key, int64_t) {
      keys.emplace_back(key);
      return true;
    });
    if (!s.ok()) return s;
    for (const auto& key : keys) {
      if (s = objects_->Delete(key); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  // Every part is its own object, durable when PutPart returned.
  absl::Status FinishParts(std::string_view) override { return absl::OkStatus(); }
  absl::StatusOr<int64_t> KeepContiguousParts(std::string_view name) override {
    auto listed = ListPartKeys(objects_, name);
    if (!listed.ok()) return listed.status();
    const auto& parts = *listed;
    absl::Status s;
    int64_t length = 0;
    size_t i = 0;
    for (; i < parts.size() && parts[i].first == length; ++i) {
      // The frame header says how many bytes the part holds: 18 bytes read, not the part.
      auto header = objects_->Get(parts[i].second, ByteRange{0, kFrameHeaderMaxBytes});
      if (!header.ok()) return header.status();
      auto size = FrameContentSize(*header);
      if (!size.ok()) break;  // a damaged part ends what counts
      length += *size;
    }
    for (; i < parts.size(); ++i) {
      if (s = objects_->Delete(parts[i].second); !s.ok()) return s;
    }
    return length;
  }
  absl::Status ListParts(const BlobVisitor& visit) override {
    std::string last;
    bool stop = false;
    absl::Status s = objects_->List(kRaw, [&](std::string_view key, int64_t) {
      std::string_view rest = key.substr(kRaw.size());
      std::string_view word = rest.substr(0, rest.find('/'));
      if (word == last) return true;
      last = std::string(word);
      std::string name;
      if (!DecodeKeyWord(word, &name)) return true;
      stop = !visit(name);
      return !stop;
    });
    return s;
  }

  std::unique_ptr<SegmentWriter> NewSegment(std::string_view name) override {
    return std::make_unique<ObjectSegmentWriter>(objects_, absl::StrCat(kEvents, EncodeKeyWord(name)));
  }
  std::unique_ptr<SegmentReader> OpenSegment(std::string_view name) override {
    return std::make_unique<ObjectSegmentReader>(objects_, absl::StrCat(kEvents, EncodeKeyWord(name)), std::string(name));
  }
  absl::Status DeleteSegment(std::string_view name, Reclaim) override {
    return objects_->Delete(absl::StrCat(kEvents, EncodeKeyWord(name)));
  }
  absl::Status ListSegments(const BlobVisitor& visit) override { return ListNames(kEvents, visit); }

 private:
  // The names of the objects directly under `folder`.
  absl::Status ListNames(const std::string& folder, const BlobVisitor& visit) {
    return objects_->List(folder, [&](std::string_view key, int64_t) {
      std::string name;
      std::string_view word = key.substr(folder.size());
      if (word.find('/') != std::string_view::npos || !DecodeKeyWord(word, &name)) return true;
      return visit(name);
    });
  }

  ObjectClient* objects_;
};

}  // namespace

absl::StatusOr<int64_t> CountSegmentBlocks(ObjectClient* objects) {
  std::vector<std::string> keys;
  absl::Status s = objects->List(kEvents, [&](std::string_view key, int64_t) {
    keys.emplace_back(key);
    return true;
  });
  if (!s.ok()) return s;
  int64_t blocks = 0;
  for (const auto& key : keys) {
    auto count = ObjectSegmentReader(objects, key, key).BlockCount();
    if (!count.ok()) return count.status();
    blocks += *count;
  }
  return blocks;
}

std::vector<std::string> WriteOnceObjectPrefixes() { return {kSummaries, kEvents}; }

std::unique_ptr<BlobStore> NewObjectBlobStore(ObjectClient* objects) {
  return std::make_unique<ObjectBlobStore>(objects);
}

}  // namespace fleetprof::cluster
