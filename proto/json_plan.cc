#include "proto/json_plan.h"

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fleetprof/v1/json_options.pb.h"
#include "proto/json_buffer.h"

namespace fleetprof::json_plan {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

using PlanMap = absl::flat_hash_map<std::pair<const Descriptor*, JsonStyle>, std::unique_ptr<MessagePlan>>;

ValueKind KindOf(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return ValueKind::kInt32;
    case FieldDescriptor::CPPTYPE_INT64:
      return ValueKind::kInt64;
    case FieldDescriptor::CPPTYPE_UINT32:
      return ValueKind::kUInt32;
    case FieldDescriptor::CPPTYPE_UINT64:
      return ValueKind::kUInt64;
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return ValueKind::kDouble;
    case FieldDescriptor::CPPTYPE_FLOAT:
      return ValueKind::kFloat;
    case FieldDescriptor::CPPTYPE_BOOL:
      return ValueKind::kBool;
    case FieldDescriptor::CPPTYPE_ENUM:
      return ValueKind::kEnum;
    case FieldDescriptor::CPPTYPE_STRING:
      return ValueKind::kString;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return ValueKind::kMessage;
  }
  return ValueKind::kInt32;  // unreachable: every cpp_type is listed
}

std::string Quoted(std::string_view text) {
  std::string out;
  {
    JsonBuffer buffer(&out);
    buffer.AppendString(text);
  }
  return out;
}

const MessagePlan* Build(const Descriptor* descriptor, JsonStyle style, PlanMap& plans);

FieldPlan BuildField(const FieldDescriptor* field, JsonStyle style, PlanMap& plans) {
  FieldPlan f;
  f.field = field;
  f.kind = KindOf(field);
  f.shape = field->is_map()        ? Shape::kMap
            : field->is_repeated() ? Shape::kList
            : field->has_presence() ? Shape::kWhenSet
                                    : Shape::kAlways;
  const bool proto3 = style == JsonStyle::kProto3;
  f.key = "," + Quoted(proto3 ? field->json_name() : field->name()) + ":";
  f.quoted = proto3 && (f.kind == ValueKind::kInt64 || f.kind == ValueKind::kUInt64);
  if (f.kind == ValueKind::kMessage) f.message = Build(field->message_type(), style, plans);
  if (f.kind == ValueKind::kEnum) {
    const auto* type = field->enum_type();
    for (int v = 0; v < type->value_count(); ++v) {
      f.enum_names.try_emplace(type->value(v)->number(), Quoted(type->value(v)->name()));
    }
  }
  return f;
}

// The plan enters the map before its fields are built, so a message that contains itself
// (directly or not) finds it there instead of recursing forever.
const MessagePlan* Build(const Descriptor* descriptor, JsonStyle style, PlanMap& plans) {
  auto [it, inserted] = plans.try_emplace(std::make_pair(descriptor, style), nullptr);
  if (!inserted) return it->second.get();
  it->second = std::make_unique<MessagePlan>();
  MessagePlan* plan = it->second.get();  // stable: the map holds pointers, not plans
  plan->unwrap = descriptor->options().GetExtension(v1::json_unwrap);
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(descriptor);
  if (prototype != nullptr) {
    plan->generated_type = &typeid(*prototype);
    plan->reflection = prototype->GetReflection();
  }
  for (int i = 0; i < descriptor->field_count(); ++i) plan->fields.push_back(BuildField(descriptor->field(i), style, plans));
  return plan;
}

struct PlanCache {
  absl::Mutex mu;
  PlanMap plans ABSL_GUARDED_BY(mu);
};

PlanCache& Cache() {
  static auto* cache = new PlanCache;  // never destroyed: plans may be used during exit
  return *cache;
}

}  // namespace

const MessagePlan& PlanFor(const Descriptor* descriptor, JsonStyle style) {
  PlanCache& cache = Cache();
  {
    absl::ReaderMutexLock lock(&cache.mu);
    auto it = cache.plans.find(std::make_pair(descriptor, style));
    if (it != cache.plans.end()) return *it->second;
  }
  // A plan and everything it reaches are complete before the lock is released, so a reader
  // that finds one never sees it half built.
  absl::MutexLock lock(&cache.mu);
  return *Build(descriptor, style, cache.plans);
}

}  // namespace fleetprof::json_plan
