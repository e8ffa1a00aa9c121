#pragma once
// --regression_webhook: each regression record POSTed as JSON (proto/proto_json.h) to a URL, from
// a thread of its own. Ingest only queues the record (a bounded queue: when full the new record
// is dropped and logged), so a slow or dead receiver never holds a commit up. A failed POST (no
// answer, or a status outside 2xx) is tried again after 1 s, 2 s, 4 s, ... on the server's
// Clock, at most kAttempts times in all.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "fleetprof/v1/regression.pb.h"

namespace fleetprof {

class RegressionWebhook {
 public:
  static constexpr int kAttempts = 5;
  static constexpr size_t kMaxQueued = 1000;
  // POSTs `body` (JSON) to `url`; OK on a 2xx answer.
  using Post = std::function<absl::Status(const std::string& url, const std::string& body)>;

  // INVALID_ARGUMENT unless `url` is http:// or https:// with a host.
  static absl::Status CheckUrl(const std::string& url);
  // The POST over libcurl (10 s per attempt).
  static absl::Status CurlPost(const std::string& url, const std::string& body);

  // Starts the sender thread. `clock` times the retries' backoff.
  RegressionWebhook(std::string url, Clock* clock, Post post = CurlPost);
  ~RegressionWebhook();  // Stop()s
  RegressionWebhook(const RegressionWebhook&) = delete;
  RegressionWebhook& operator=(const RegressionWebhook&) = delete;

  // Stops sending, for the server's drain: the POST in progress is waited for (at most its
  // 10 s), a retry it would have made is not, and what is still queued is dropped, counted in
  // given_up() and logged once. Any thread, any number of times; a second Stop waits too.
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_, mu_);
  // Stop has begun: work not yet started is refused from here on. For tests that hold the
  // work in progress and must know Stop is under way before they let it go.
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }
  // Queues `record`; never blocks on the network. False when the queue was full or Stop ran
  // (dropped, counted in given_up()).
  bool Enqueue(const v1::Regression& record);
  // Records POSTed with a 2xx answer, and records given up (after kAttempts, or dropped).
  int64_t delivered() const;
  int64_t given_up() const;

 private:
  void Run();

  const std::string url_;
  Clock* const clock_;
  const Post post_;
  mutable absl::Mutex mu_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);  // JSON bodies, oldest first
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t delivered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t given_up_ ABSL_GUARDED_BY(mu_) = 0;
  // Held by Stop alone, across the join (no reader or sender takes it).
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::thread thread_ ABSL_GUARDED_BY(stop_mu_);  // last: started once the members it uses are
};

}  // namespace fleetprof
