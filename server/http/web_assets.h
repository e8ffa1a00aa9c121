#pragma once
// The web app's files, compiled into the binary (server/embed_web_assets.cmake).

#include <span>
#include <string_view>

namespace fleetprof {

struct WebAsset {
  std::string_view name;  // file name under server/web, e.g. "app.js"
  std::string_view content_type;
  std::string_view data;
};

std::span<const WebAsset> WebAssets();

}  // namespace fleetprof
