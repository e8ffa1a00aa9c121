#pragma once
// The CLI's commands in one table: name, arguments, what it does, and the function that runs
// it. `fleetprof --help` prints the table, a wrong call prints its row's usage, and the
// dispatch looks the name up in it, so a new command is one row: with a Run function of its
// own, or just the method it calls, whose request is filled from the flags of its fields' names.

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/flags.h"

#include "client/cli.h"

namespace fleetprof::cli {

struct Command {
  const char* name;   // "diff"
  const char* usage;  // "BASE PROFILE [PROFILE...] [--by op|kernel|scope]"
  const char* what;   // one sentence; '\n' starts another line of it in the help
  int (*run)(const CliOptions& options);  // null: call `method` (client/declared_call.h)
  const char* method = nullptr;           // "fleetprof.v1.QueryService.ListJobs"
  // The flags it takes beside the common ones (kCommonFlags), space-separated; "@limits" stands
  // for the trace limits (analysis/trace_limits.h). A declared call takes the flags its
  // request has fields for (DeclaredCallFlags).
  const char* flags = "";
  // Works on local files only: it starts no gRPC (whose threads cost a short command a
  // millisecond to start and to join) and sends no credentials anywhere.
  bool local = false;
};

// Every command takes these: where the server is, how it answers, and the credentials.
inline constexpr const char* kCommonFlags[] = {"server", "json", "timeout_s", "token_file", "tls_ca",
                                               "tls_cert", "tls_key", "insecure"};

const std::vector<Command>& Commands();
// The command called `name`; null if there is none.
const Command* FindCommand(const std::string& name);
// The flags `command` takes besides the common ones, by name (no "--").
std::set<std::string> CommandFlags(const Command& command, const FlagSet& all);
// "fleetprof COMMAND --help": its usage, what it does, and its flags' help lines.
std::string CommandHelp(const Command& command, const FlagSet& all);
// OK when every flag the command line set is one `command` takes; else INVALID_ARGUMENT
// naming the stranger and listing the command's own, spelled --flag.
absl::Status CheckCommandFlags(const Command& command, const FlagSet& all);

// The top of --help: the synopsis, then every command of the table.
std::string CommandsHelp();

// Fails with "usage: fleetprof NAME USAGE" from the command's row.
int FailUsage(const std::string& name);

// Runs `name` with `options`; an unknown name is an error pointing at --help.
int RunCommand(const std::string& name, const CliOptions& options);

}  // namespace fleetprof::cli
