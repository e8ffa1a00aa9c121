// docs/api.md is the catalog's API reference (api/api_reference.h), byte for byte: a method or
// route added to a .proto without the page written anew fails here. With
// FLEETPROF_UPDATE_API_REFERENCE=1 the test writes the page instead
// (scripts/update-api-reference.sh).

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "api/api_catalog.h"
#include "api/api_reference.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

const std::string kPage = std::string(FLEETPROF_SOURCE_DIR) + "/docs/api.md";

TEST(ApiReference, DocsApiMdIsWhatTheCatalogDeclares) {
  const std::string rendered = RenderApiReference(ApiCatalog::Get());
  if (const char* update = std::getenv("FLEETPROF_UPDATE_API_REFERENCE"); update != nullptr && std::string(update) == "1") {
    std::ofstream(kPage, std::ios::binary | std::ios::trunc) << rendered;
  }
  std::ifstream in(kPage, std::ios::binary);
  ASSERT_TRUE(in.good()) << kPage << " is missing: run scripts/update-api-reference.sh";
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == rendered)
      << kPage << " differs from the API's declarations: run scripts/update-api-reference.sh and commit it";
}

TEST(ApiReference, EveryRouteAndMethodIsOnThePage) {
  const std::string rendered = RenderApiReference(ApiCatalog::Get());
  for (const ApiRoute& route : ApiCatalog::Get().routes()) {
    EXPECT_NE(rendered.find("`" + route.verb + " " + route.path + "`"), std::string::npos) << route.path;
  }
  for (const auto& method : ApiCatalog::Get().methods()) {
    EXPECT_NE(rendered.find("| `" + method->descriptor->name() + "`"), std::string::npos) << method->grpc_path;
  }
}

}  // namespace
}  // namespace fleetprof
