#pragma once
// fleetprof-agent's flags: each one's name, help and default (docs/flags.md is generated from
// this --help), and the files some of them name, read as the operator's.

#include <string>

#include "absl/status/status.h"
#include "agent/agent.h"
#include "common/flags.h"
#include "rpc/channel.h"

namespace fleetprof {

struct AgentFlags {
  AgentConfig config;
  ClientSecurityFlags security;
  std::string dynolog_token_file;
  std::string ready_file;
  std::string log_level = "info";
};

// The agent's usage line and description, for FlagSet.
extern const char kAgentUsage[];

// Declares every flag of the agent on `flags_set`, writing into `flags`. The defaults that
// come from the machine (the host name, $KINETO_IPC_SOCKET_DIR) are set first.
void AddAgentFlags(FlagSet& flags_set, AgentFlags* flags);

// Reads the files the flags name (tokens, TLS) into flags->config and checks that a token
// does not travel in the clear; the error says which flag.
absl::Status LoadAgentSecrets(AgentFlags* flags);

}  // namespace fleetprof
