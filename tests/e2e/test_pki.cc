#include "tests/e2e/test_pki.h"

#include <filesystem>

namespace fleetprof::testing {

CommandResult MakeTestPki(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string script =
      "set -e; cd '" + dir + "'; "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca 2>/dev/null; "
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > san.ext; "
      "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=localhost 2>/dev/null; "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 "
      "-extfile san.ext 2>/dev/null; "
      "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj /CN=n1 2>/dev/null; "
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2 2>/dev/null; "
      "openssl req -x509 -newkey rsa:2048 -nodes -keyout other.key -out other.pem -days 2 -subj /CN=other 2>/dev/null";
  return RunCommand({"/bin/sh", "-c", script}, 120);
}

}  // namespace fleetprof::testing
