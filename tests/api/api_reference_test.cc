// docs/api.md is the catalog's API reference (api/api_reference.h), byte for byte: a method or
// route added to a .proto without the page written anew fails here. With
// FLEETPROF_UPDATE_API_REFERENCE=1 the test writes the page instead
// (scripts/update-api-reference.sh).

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "api/api_catalog.h"
#include "api/api_reference.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

// `relative` (under the checkout) holds exactly `rendered`; with FLEETPROF_UPDATE_API_REFERENCE=1
// it is written first.
void ExpectGeneratedFile(const std::string& relative, const std::string& rendered) {
  const std::string file = std::string(FLEETPROF_SOURCE_DIR) + "/" + relative;
  if (const char* update = std::getenv("FLEETPROF_UPDATE_API_REFERENCE"); update != nullptr && std::string(update) == "1") {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << rendered;
  }
  std::ifstream in(file, std::ios::binary);
  ASSERT_TRUE(in.good()) << file << " is missing: run scripts/update-api-reference.sh";
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == rendered)
      << file << " differs from the API's declarations: run scripts/update-api-reference.sh and commit it";
}

TEST(ApiReference, DocsApiMdIsWhatTheCatalogDeclares) {
  ExpectGeneratedFile("docs/api.md", RenderApiReference(ApiCatalog::Get()));
}

TEST(ApiReference, TheWebAppsRouteTableIsWhatTheCatalogDeclares) {
  ExpectGeneratedFile("server/http/web/generated-routes.js", RenderWebRoutes(ApiCatalog::Get()));
}

// The web app writes no /api/v1 path of its own: it names methods (apiPath in core.js).
TEST(ApiReference, TheWebAppsScriptsWriteNoApiPath) {
  const std::string dir = std::string(FLEETPROF_SOURCE_DIR) + "/server/http/web";
  int scripts = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".js") || name.find("generated") != std::string::npos) continue;
    ++scripts;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find("/api/v1"), std::string::npos) << name << " writes an /api/v1 path";
  }
  EXPECT_GT(scripts, 10);
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
