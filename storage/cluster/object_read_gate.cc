#include "storage/cluster/object_read_gate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/call_bounds.h"
#include "common/concurrency_slots.h"

namespace fleetprof::cluster {
namespace {

class ObjectReadGate : public ObjectClient {
 public:
  ObjectReadGate(std::unique_ptr<ObjectClient> inner, const ObjectReadGateOptions& options)
      : inner_(std::move(inner)), options_(options), slots_(std::max(1, options.slots)) {}

  std::string Describe() const override { return inner_->Describe(); }
  bool healthy() const override { return inner_->healthy(); }

  absl::Status Put(std::string_view key, std::string_view bytes) override { return inner_->Put(key, bytes); }
  absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    return Gated<std::string>([&] { return inner_->Get(key, range); });
  }
  absl::StatusOr<int64_t> Size(std::string_view key) override {
    return Gated<int64_t>([&] { return inner_->Size(key); });
  }
  absl::Status Delete(std::string_view key) override { return inner_->Delete(key); }
  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override {
    auto listed = Gated<bool>([&]() -> absl::StatusOr<bool> {
      if (absl::Status s = inner_->List(prefix, visit); !s.ok()) return s;
      return true;
    });
    return listed.status();
  }
  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    return inner_->NewWriter(key);
  }

 private:
  template <typename T, typename Read>
  absl::StatusOr<T> Gated(const Read& read) {
    if (CurrentCallBounds() == nullptr) return read();
    const int64_t left_ms = std::max<int64_t>(0, CallTimeLeftNanos() / 1'000'000);
    const auto wait = std::min<std::chrono::milliseconds>(options_.wait, std::chrono::milliseconds(left_ms));
    ConcurrencySlots::Held slot(&slots_, wait);
    if (!slot.ok()) {
      return absl::UnavailableError(absl::StrCat("the object store (", inner_->Describe(), ") is slow to answer: ",
                                                 options_.slots, " reads for queries already wait on it; retry shortly"));
    }
    return read();
  }

  std::unique_ptr<ObjectClient> inner_;
  const ObjectReadGateOptions options_;
  ConcurrencySlots slots_;
};

}  // namespace

std::unique_ptr<ObjectClient> NewObjectReadGate(std::unique_ptr<ObjectClient> inner, const ObjectReadGateOptions& options) {
  return std::make_unique<ObjectReadGate>(std::move(inner), options);
}

}  // namespace fleetprof::cluster
