#include "storage/cluster/s3_credentials.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/operator_file.h"

namespace fleetprof::cluster {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

absl::Status LoadS3Credentials(const std::string& file, S3Settings* settings) {
  settings->access_key = Env("AWS_ACCESS_KEY_ID");
  settings->secret_key = Env("AWS_SECRET_ACCESS_KEY");
  settings->session_token = Env("AWS_SESSION_TOKEN");
  if (!settings->access_key.empty() || file.empty()) return absl::OkStatus();

  std::string profile = Env("AWS_PROFILE");
  if (profile.empty()) profile = "default";
  absl::StatusOr<std::string> contents = ReadOperatorFile({.what = "--s3_credentials_file", .secret = true}, file);
  if (!contents.ok()) return contents.status();
  std::string section;
  for (absl::string_view line : absl::StrSplit(*contents, '\n')) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#' || text[0] == ';') continue;
    if (text.front() == '[' && text.back() == ']') {
      section = std::string(absl::StripAsciiWhitespace(text.substr(1, text.size() - 2)));
      continue;
    }
    if (section != profile) continue;
    const size_t eq = text.find('=');
    if (eq == absl::string_view::npos) continue;
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text.substr(0, eq)));
    std::string value(absl::StripAsciiWhitespace(text.substr(eq + 1)));
    if (key == "aws_access_key_id") settings->access_key = value;
    if (key == "aws_secret_access_key") settings->secret_key = value;
    if (key == "aws_session_token") settings->session_token = value;
  }
  if (settings->access_key.empty() || settings->secret_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--s3_credentials_file ", file, ": no aws_access_key_id and aws_secret_access_key in [", profile, "]"));
  }
  return absl::OkStatus();
}

}  // namespace fleetprof::cluster
