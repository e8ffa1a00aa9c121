#pragma once
// A command row without a Run function of its own (client/commands.h) calls its method by
// name: the request's fields come from the flags of the same name (--job, --label k=v for a
// `labels` map, --since_ns, --until_ns, --limit), the answer prints as JSON with --json, else
// as a table of its first list. So a plain query needs no CLI code beyond its row.

#include <string>
#include <vector>

#include "client/cli.h"

namespace fleetprof::cli {

// `method`: "fleetprof.v1.QueryService.ListJobs". `command`: the row's name, for errors.
int RunDeclaredCall(const std::string& command, const std::string& method, const CliOptions& options);
// The flags a call of `method` takes: those whose field its request has.
std::vector<std::string> DeclaredCallFlags(const std::string& method);

}  // namespace fleetprof::cli
