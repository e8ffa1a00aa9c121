#pragma once
// Test certificates, made with Debian's openssl for TLS tests (the server's listeners, etcd).

#include <string>

#include "tests/e2e/process_runner.h"

namespace fleetprof::testing {

// Makes in `dir` (created): ca.pem/ca.key (CN=test-ca), server.pem/server.key signed by it for
// 127.0.0.1 and localhost, client.pem/client.key signed by it (CN=n1), and other.pem/other.key
// (self-signed: a CA nobody trusts). The result of the openssl commands (exit code, stderr).
CommandResult MakeTestPki(const std::string& dir);

}  // namespace fleetprof::testing
