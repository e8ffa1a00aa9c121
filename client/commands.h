#pragma once
// The CLI's commands in one table: name, arguments, what it does, and the function that runs
// it. `fleetprof --help` prints the table, a wrong call prints its row's usage, and the
// dispatch looks the name up in it, so a new command is one row: with a Run function of its
// own, or just the method it calls, whose request is filled from the flags of its fields' names.

#include <string>
#include <vector>

#include "client/cli.h"

namespace fleetprof::cli {

struct Command {
  const char* name;   // "diff"
  const char* usage;  // "BASE PROFILE [PROFILE...] [--by op|kernel|scope]"
  const char* what;   // one sentence; '\n' starts another line of it in the help
  int (*run)(const CliOptions& options);  // null: call `method` (client/declared_call.h)
  const char* method = nullptr;           // "fleetprof.v1.QueryService.ListJobs"
};

const std::vector<Command>& Commands();

// The top of --help: the synopsis, then every command of the table.
std::string CommandsHelp();

// Fails with "usage: fleetprof NAME USAGE" from the command's row.
int FailUsage(const std::string& name);

// Runs `name` with `options`; an unknown name is an error pointing at --help.
int RunCommand(const std::string& name, const CliOptions& options);

}  // namespace fleetprof::cli
