#include "server/ingest/regression_webhook.h"

#include <curl/curl.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "proto/proto_json.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kFirstBackoffNs = 1'000'000'000;

size_t DiscardBody(char*, size_t size, size_t count, void*) { return size * count; }

}  // namespace

absl::Status RegressionWebhook::CheckUrl(const std::string& url) {
  std::string_view rest;
  if (absl::StartsWith(url, "http://")) {
    rest = std::string_view(url).substr(7);
  } else if (absl::StartsWith(url, "https://")) {
    rest = std::string_view(url).substr(8);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--regression_webhook must be an http:// or https:// URL, not '", url, "'"));
  }
  if (rest.empty() || rest[0] == '/' || rest.find_first_of(" \t\r\n") != rest.npos) {
    return absl::InvalidArgumentError(absl::StrCat("--regression_webhook '", url, "' has no host"));
  }
  return absl::OkStatus();
}

absl::Status RegressionWebhook::CurlPost(const std::string& url, const std::string& body) {
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POST, 1L);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, DiscardBody);
  const CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  if (code != CURLE_OK) return absl::UnavailableError(absl::StrCat("POST ", url, ": ", curl_easy_strerror(code)));
  if (status < 200 || status >= 300) return absl::UnavailableError(absl::StrCat("POST ", url, ": HTTP ", status));
  return absl::OkStatus();
}

RegressionWebhook::RegressionWebhook(std::string url, Clock* clock, Post post)
    : url_(std::move(url)), clock_(clock), post_(std::move(post)), thread_([this] { Run(); }) {}

RegressionWebhook::~RegressionWebhook() { Stop(); }

void RegressionWebhook::Stop() {
  absl::MutexLock stopping(&stop_mu_);  // a second Stop waits here for the first one's join
  size_t dropped = 0;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    dropped = queue_.size();
    given_up_ += static_cast<int64_t>(dropped);
    queue_.clear();
  }
  if (dropped > 0) spdlog::warn("regression webhook: stopping with {} records not sent", dropped);
  // Outside mu_: the sender finishes the POST in progress (it holds no lock meanwhile).
  if (thread_.joinable()) thread_.join();
}

bool RegressionWebhook::Enqueue(const v1::Regression& record) {
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    ++given_up_;
    return false;
  }
  if (queue_.size() >= kMaxQueued) {
    ++given_up_;
    spdlog::warn("regression webhook: {} records queued, dropping {}", queue_.size(), record.regression_id());
    return false;
  }
  queue_.push_back(ProtoToJson(record));
  return true;
}

int64_t RegressionWebhook::delivered() const {
  absl::MutexLock lock(&mu_);
  return delivered_;
}

int64_t RegressionWebhook::given_up() const {
  absl::MutexLock lock(&mu_);
  return given_up_;
}

void RegressionWebhook::Run() {
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); };
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  for (;;) {
    std::string body;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      body = std::move(queue_.front());
      queue_.pop_front();
    }
    int64_t backoff = kFirstBackoffNs;
    for (int attempt = 1;; ++attempt) {
      absl::Status s = post_(url_, body);  // no lock held: the network may take its time
      absl::MutexLock lock(&mu_);
      if (s.ok()) {
        ++delivered_;
        break;
      }
      if (attempt == kAttempts) {
        ++given_up_;
        spdlog::warn("regression webhook: giving up after {} attempts: {}", attempt, std::string(s.message()));
        break;
      }
      spdlog::info("regression webhook: attempt {} failed ({}), again in {} s", attempt, std::string(s.message()), backoff / 1e9);
      if (clock_->WaitUntil(&mu_, absl::Condition(&stopping), clock_->MonotonicNanos() + backoff)) {
        ++given_up_;  // stopped before its next attempt
        return;
      }
      backoff *= 2;
    }
  }
}

}  // namespace fleetprof
