#include "api/operations.h"

#include "absl/strings/str_cat.h"

namespace fleetprof {

using google::protobuf::Descriptor;
using google::protobuf::MethodDescriptor;

const MethodDescriptor* Operations::Check(absl::string_view method, const Descriptor* input,
                                          const Descriptor* output) {
  const MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(std::string(method));
  absl::Status problem;
  if (descriptor == nullptr) {
    problem = absl::InternalError(absl::StrCat("operation ", method, " is no method of the API"));
  } else if (descriptor->input_type() != input || (output != nullptr && descriptor->output_type() != output)) {
    problem = absl::InternalError(absl::StrCat("operation ", method, " is registered with other message types"));
  } else if (unary_.contains(descriptor) || files_.contains(descriptor)) {
    problem = absl::InternalError(absl::StrCat("operation ", method, " is registered twice"));
  }
  if (problem.ok()) return descriptor;
  if (status_.ok()) status_ = problem;
  return nullptr;
}

const Operations::UnaryFn* Operations::FindUnary(const MethodDescriptor* method) const {
  auto it = unary_.find(method);
  return it == unary_.end() ? nullptr : &it->second;
}

const Operations::FileFn* Operations::FindFile(const MethodDescriptor* method) const {
  auto it = files_.find(method);
  return it == files_.end() ? nullptr : &it->second;
}

}  // namespace fleetprof
