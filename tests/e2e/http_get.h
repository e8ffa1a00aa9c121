#pragma once
// The HTTP tests' one way to GET a route of the server under test and check its status.

#include <string>

#include "gtest/gtest.h"
#include "httplib.h"

namespace fleetprof::testing {

// GETs `path` with `client`; expects an answer with `status` and returns its body ("" when
// no answer came, which fails the test).
inline std::string ExpectGet(httplib::Client& client, const std::string& path, int status = 200) {
  auto res = client.Get(path);
  EXPECT_TRUE(res) << path << ": " << httplib::to_string(res.error());
  if (!res) return "";
  EXPECT_EQ(res->status, status) << path << ": " << res->body;
  return res->body;
}

}  // namespace fleetprof::testing
