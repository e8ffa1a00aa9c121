// `fleetprof export PROFILE [--format original|chrome_json|pprof] -o FILE`: the profile as a file.
// "original" is the trace exactly as uploaded; "chrome_json" its stored events (or those of
// --start_ns/--end_ns) as Chrome-trace JSON; "pprof" its call tree as a gzipped profile.proto. The file appears only when complete (FILE.tmp, then a
// rename), so a broken transfer never leaves a short file under the name asked for.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "common/clock.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {

int RunExport(const CliOptions& options) {
  if (options.args.size() != 1 || options.output.empty()) {
    return FailUsage("export");
  }
  const std::string format = options.format.empty() ? "original" : options.format;
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  // A whole trace can take a while: --timeout_s, but at least 10 minutes.
  context.set_deadline(GrpcDeadlineAt(RealClock()->Now()) +
                       std::chrono::seconds(std::max<int64_t>(options.timeout_s, 600)));
  v1::ExportProfileRequest request;
  request.set_profile_id(options.args[0]);
  request.set_format(format);
  request.set_start_ns(options.start_ns);
  request.set_end_ns(options.end_ns);
  const std::string tmp = options.output + ".tmp";
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) return Fail(absl::StrCat("cannot write ", tmp));
  auto reader = stub->ExportProfile(&context, request);
  v1::ExportChunk chunk;
  int64_t bytes = 0;
  while (reader->Read(&chunk)) {
    out.write(chunk.data().data(), static_cast<std::streamsize>(chunk.data().size()));
    bytes += static_cast<int64_t>(chunk.data().size());
  }
  grpc::Status s = reader->Finish();
  out.close();
  std::error_code ec;
  if (!s.ok() || !out) {
    std::filesystem::remove(tmp, ec);
    return s.ok() ? Fail(absl::StrCat("cannot write ", tmp)) : FailRpc(s, options);
  }
  std::filesystem::rename(tmp, options.output, ec);
  if (ec) return Fail(absl::StrCat("cannot rename ", tmp, " to ", options.output, ": ", ec.message()));
  v1::ExportResult result;
  result.set_profile_id(options.args[0]);
  result.set_format(format);
  result.set_path(options.output);
  result.set_bytes(bytes);
  if (options.json) {
    std::cout << ProtoToJson(result) << "\n";
  } else {
    std::cout << "wrote " << options.output << " (" << bytes << " bytes, " << format << ")\n";
  }
  return 0;
}

}  // namespace fleetprof::cli
