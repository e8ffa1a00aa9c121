#include "client/declared_call.h"

#include <future>
#include <iostream>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "proto/api_files.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The flags a request field of that name takes its value from; false for a malformed one.
// The flags a declared call fills its request from, by the field they fill (FillFromFlags).
constexpr std::pair<const char*, const char*> kFieldFlags[] = {
    {"labels", "label"}, {"job", "job"}, {"node", "node"}, {"since_ns", "since_ns"}, {"until_ns", "until_ns"},
    {"limit", "limit"}};

const google::protobuf::MethodDescriptor* FindDeclaredMethod(const std::string& method) {
  // Every API file's descriptors are in the pool once their list is referenced (a method only
  // the CLI's declared calls name would otherwise be left out by the linker).
  for (const std::string& file : ApiProtoFileNames()) google::protobuf::DescriptorPool::generated_pool()->FindFileByName(file);
  return google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(method);
}

bool FillFromFlags(const CliOptions& options, Message* request, std::string* error) {
  const auto* d = request->GetDescriptor();
  const auto* r = request->GetReflection();
  if (const FieldDescriptor* f = d->FindFieldByName("labels"); f != nullptr && f->is_map()) {
    std::map<std::string, std::string> labels;
    if (!ParseLabels(options.labels, &labels, error)) return false;
    for (const auto& [key, value] : labels) {
      Message* entry = r->AddMessage(request, f);
      entry->GetReflection()->SetString(entry, f->message_type()->map_key(), key);
      entry->GetReflection()->SetString(entry, f->message_type()->map_value(), value);
    }
  }
  const std::pair<const char*, const std::string*> strings[] = {{"job", &options.job}, {"node", &options.node}};
  for (const auto& [name, value] : strings) {
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (f != nullptr && f->type() == FieldDescriptor::TYPE_STRING && !f->is_repeated()) r->SetString(request, f, *value);
  }
  const std::pair<const char*, int64_t> numbers[] = {
      {"since_ns", options.since_ns}, {"until_ns", options.until_ns}, {"limit", options.limit}};
  for (const auto& [name, value] : numbers) {
    const FieldDescriptor* f = d->FindFieldByName(name);
    if (f == nullptr || f->is_repeated()) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) r->SetInt64(request, f, value);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT32) r->SetInt32(request, f, static_cast<int32_t>(value));
  }
  return true;
}

std::string CellOf(const Message& row, const FieldDescriptor* f) {
  const auto* r = row.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: return r->GetString(row, f);
    case FieldDescriptor::CPPTYPE_INT64: return absl::StrCat(r->GetInt64(row, f));
    case FieldDescriptor::CPPTYPE_INT32: return absl::StrCat(r->GetInt32(row, f));
    case FieldDescriptor::CPPTYPE_UINT64: return absl::StrCat(r->GetUInt64(row, f));
    case FieldDescriptor::CPPTYPE_DOUBLE: return absl::StrCat(r->GetDouble(row, f));
    case FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(row, f) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_ENUM: return r->GetEnum(row, f)->name();
    default: return "";
  }
}

// The answer's first list of messages as a table of their plain fields.
std::string TableOf(const Message& response) {
  const auto* d = response.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* list = d->field(i);
    if (!list->is_repeated() || list->is_map() || list->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    std::vector<const FieldDescriptor*> columns;
    std::vector<std::string> headers;
    for (int c = 0; c < list->message_type()->field_count(); ++c) {
      const FieldDescriptor* f = list->message_type()->field(c);
      if (f->is_repeated() || f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) continue;
      columns.push_back(f);
      const bool number = f->cpp_type() != FieldDescriptor::CPPTYPE_STRING && f->cpp_type() != FieldDescriptor::CPPTYPE_ENUM;
      headers.push_back((number ? ">" : "") + absl::AsciiStrToUpper(f->name()));
    }
    TablePrinter table(headers);
    const auto* r = response.GetReflection();
    for (int row = 0; row < r->FieldSize(response, list); ++row) {
      const Message& item = r->GetRepeatedMessage(response, list, row);
      std::vector<std::string> cells;
      for (const FieldDescriptor* f : columns) cells.push_back(CellOf(item, f));
      table.AddRow(std::move(cells));
    }
    return table.Render();
  }
  return ProtoToJson(response) + "\n";
}

}  // namespace

int RunDeclaredCall(const std::string& command, const std::string& method, const CliOptions& options) {
  if (!options.args.empty()) return FailUsage(command);
  const auto* descriptor = FindDeclaredMethod(method);
  if (descriptor == nullptr) return Fail("this fleetprof does not know " + method);
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  std::unique_ptr<Message> request(factory->GetPrototype(descriptor->input_type())->New());
  std::unique_ptr<Message> response(factory->GetPrototype(descriptor->output_type())->New());
  std::string error;
  if (!FillFromFlags(options, request.get(), &error)) return Fail(error);

  std::string bytes;
  request->SerializeToString(&bytes);
  grpc::Slice slice(std::move(bytes));
  grpc::ByteBuffer request_buffer(&slice, 1);
  grpc::ByteBuffer response_buffer;
  grpc::GenericStub stub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, absl::StrCat("/", descriptor->service()->full_name(), "/", descriptor->name()),
                 grpc::StubOptions(), &request_buffer, &response_buffer,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  if (!status.ok()) return FailRpc(status, options);
  grpc::ProtoBufferReader reader(&response_buffer);
  if (!response->ParseFromZeroCopyStream(&reader)) return Fail("the server's answer to " + command + " does not parse");
  std::cout << (options.json ? ProtoToJson(*response) + "\n" : TableOf(*response));
  return 0;
}

std::vector<std::string> DeclaredCallFlags(const std::string& method) {
  std::vector<std::string> flags;
  const auto* descriptor = FindDeclaredMethod(method);
  if (descriptor == nullptr) return flags;
  for (const auto& [field, flag] : kFieldFlags) {
    if (descriptor->input_type()->FindFieldByName(field) != nullptr) flags.push_back(flag);
  }
  return flags;
}

}  // namespace fleetprof::cli
